"""`gpuplatform schema`: the JSON Schema accepts valid specs and rejects what the loader rejects."""

from __future__ import annotations

import jsonschema
import pytest

from gpuplatform.load.schema import spec_schema
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
