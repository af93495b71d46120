"""`gpuplatform schema`: the JSON Schema accepts valid specs and rejects what the loader rejects."""

from __future__ import annotations

import jsonschema
import pytest

from gpuplatform.load.schema import _describe, schema_objects, spec_schema
from gpuplatform.model.base import SpecModel
from tests.specs import minimal_spec


def test_minimal_spec_validates_against_the_published_schema() -> None:
    jsonschema.Draft202012Validator(spec_schema()).validate(minimal_spec())


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d["spec"]["nodePools"][0].update(colour="red"),
        lambda d: d.update(kind="Cluster"),
        lambda d: d["spec"].pop("waves"),
        lambda d: d["metadata"].update(name="Not_A_Label"),
    ],
)
def test_schema_rejects_bad_specs(mutate: object) -> None:
    doc = minimal_spec()
    assert callable(mutate)
    mutate(doc)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(spec_schema()).validate(doc)


def _properties(node: object) -> list[tuple[str, dict[str, object]]]:
    return [
        (name, prop) for obj in schema_objects(node) for name, prop in (obj.get("properties") or {}).items()
    ]


def test_every_spec_field_has_a_title_and_a_description_from_its_docstring() -> None:
    schema = spec_schema()
    spec_fields = _properties(schema["properties"]["spec"]) + _properties(schema["$defs"])
    missing = [name for name, prop in spec_fields if not prop.get("description") or not prop.get("title")]
    assert missing == []
    pool = schema["$defs"]["NodePool"]["properties"]["gpusPerNode"]
    assert (pool["title"], pool["description"]) == (
        "GPUs on each node of the pool",
        "GPUs on each node of the pool.",
    )
    assert schema["$defs"]["NodePool"]["description"].startswith("A set of GPU nodes that migrate together.")


def test_the_overlay_schema_accepts_the_staging_overlay_and_marked_additions() -> None:
    from pathlib import Path

    import yaml

    from gpuplatform.load.schema import overlay_schema
    from tests.conftest import REPO

    validator = jsonschema.Draft202012Validator(overlay_schema())
    staging = yaml.safe_load(Path(REPO / "overlays" / "reference-staging.yaml").read_text())
    validator.validate(staging)
    addition = {
        "apiVersion": "gpuplatform.dev/v1alpha1",
        "kind": "PlatformOverlay",
        "spec": {"waves": [{"name": "scale-2", "stage": "scale", "$add": True}]},
    }
    validator.validate(addition)
    misplaced = {**addition, "spec": {"validation": {"tenant": "x", "$add": True}}}
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(misplaced)


class _Base(SpecModel):
    size: int = 1
    """Size of the base."""
    kept: int = 2
    """Kept by the child."""


class _Child(_Base):
    size: int = 3
    extra: int = 4
    """Only the child's."""


def test_field_descriptions_come_from_the_class_declaring_the_field_as_pydantic_reads_them() -> None:
    _describe(_Child, set())
    fields = _Child.model_fields
    assert (fields["size"].description, fields["kept"].description, fields["extra"].description) == (
        None,
        "Kept by the child.",
        "Only the child's.",
    )
    assert _Child.model_json_schema()["properties"]["extra"]["description"] == "Only the child's."
