"""The Platform checks itself: a dangling name built in Python is a located ValidationError with the
words the loader prints for the same name in YAML, never a KeyError later (issue 37, item 1)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from gpuplatform.errors import InputError, format_loc
from gpuplatform.load.documents import platform_document
from gpuplatform.load.stacks import load_stack
from gpuplatform.model import (
    BridgeClass,
    ClaimTemplate,
    NimService,
    Platform,
    ServiceTier,
    ValidationWorkload,
    Workload,
)
from tests.sdk import lab_platform, lab_platform_fields
from tests.specs import write_spec

Loc = tuple[int | str, ...]


def _located(exc: ValidationError) -> dict[Loc, str]:
    return {tuple(e["loc"]): e["msg"] for e in exc.errors()}


def test_a_dangling_wave_built_in_python_is_a_located_validation_error() -> None:
    fields = lab_platform_fields()
    fields["node_pools"][1] = fields["node_pools"][1].model_copy(update={"migrates_in": "pilto"})
    with pytest.raises(ValidationError) as exc:
        Platform(**fields)
    assert exc.value.title == "Platform"
    assert exc.value.errors()[0]["type"] == "platform_reference"
    assert exc.value.errors()[0]["input"] == "pilto"
    assert _located(exc.value) == {
        (
            "nodePools",
            1,
            "migratesIn",
        ): "wave 'pilto' is not defined in spec.waves (defined: base, pilot, claims, cutover)"
    }


def test_python_and_yaml_give_the_same_located_line(tmp_path: Path) -> None:
    # GIVEN one dangling tier, written once as YAML and once as a Python stack
    fields = lab_platform_fields()
    document = platform_document(lab_platform())
    document["spec"]["tenants"][0]["tiers"] = ["fulll"]
    spec = write_spec(tmp_path / "lab.yaml", document)
    stack = tmp_path / "lab.py"
    stack.write_text(
        "from tests.sdk import lab_platform_fields\n"
        "from gpuplatform.model import Platform\n"
        "fields = lab_platform_fields()\n"
        "fields['tenants'][0] = fields['tenants'][0].model_copy(update={'tiers': ('fulll',)})\n"
        "platform = Platform(**fields)\n"
    )
    assert fields  # the builder the stack uses
    # WHEN both are loaded
    lines = []
    for path in (spec, stack):
        with pytest.raises(InputError) as exc:
            load_stack(path)
        lines.append([(p.loc, p.message) for p in exc.value.problems])
    # THEN the location and the words are the same; the Python stack's hint names the line
    assert (
        lines[0]
        == lines[1]
        == [("spec.tenants[0].tiers[0]", "tier 'fulll' is not defined in spec.tiers (defined: full)")]
    )
    with pytest.raises(InputError) as exc:
        load_stack(stack)
    assert exc.value.problems[0].hint == "the Platform built at line 5"


def test_a_python_stack_field_error_is_located_by_its_spec_path(tmp_path: Path) -> None:
    stack = tmp_path / "lab.py"
    stack.write_text(
        "from tests.sdk import lab_platform_fields\n"
        "from gpuplatform.model import Platform\n"
        "platform = Platform(**(lab_platform_fields() | {'active_wave': 'Not A Label'}))\n"
    )
    with pytest.raises(InputError) as exc:
        load_stack(stack)
    assert [(p.loc, p.message) for p in exc.value.problems] == [
        (
            "spec.activeWave",
            "'Not A Label' is not a DNS label (lower case letters, digits and '-', at most 63)",
        )
    ]


#: Every reference field of the SDK: how to make it name `name`, the spec path of that field and a
#: name it may hold (the lab platform defines it).
_REFERENCES: dict[str, tuple[Callable[[dict[str, Any], str], None], Loc, str]] = {
    "activeWave": (lambda f, n: f.update(active_wave=n), ("activeWave",), "claims"),
    "nodePools.migratesIn": (
        lambda f, n: f["node_pools"].__setitem__(1, f["node_pools"][1].model_copy(update={"migrates_in": n})),
        ("nodePools", 1, "migratesIn"),
        "claims",
    ),
    "tiers.owner": (
        lambda f, n: f.update(tiers=[ServiceTier(name="full", device_type="gpu", owner=n)]),
        ("tiers", 0, "owner"),
        "team-a",
    ),
    "bridges.tier": (
        lambda f, n: f.update(
            bridges=[BridgeClass(name="b", extended_resource_name="example.com/gpu", tier=n)]
        ),
        ("bridges", 0, "tier"),
        "full",
    ),
    "tenants.tiers": (
        lambda f, n: f["tenants"].__setitem__(0, f["tenants"][0].model_copy(update={"tiers": ("full", n)})),
        ("tenants", 0, "tiers", 1),
        "full-b",
    ),
    "tenants.claimTemplates.tier": (
        lambda f, n: f["tenants"].__setitem__(
            0,
            f["tenants"][0].model_copy(update={"claim_templates": (ClaimTemplate(name="one-gpu", tier=n),)}),
        ),
        ("tenants", 0, "claimTemplates", 0, "tier"),
        "full",
    ),
    "waves.tiers": (
        lambda f, n: f["waves"].__setitem__(2, f["waves"][2].model_copy(update={"tiers": (n,)})),
        ("waves", 2, "tiers", 0),
        "full",
    ),
    "waves.tenants": (
        lambda f, n: f["waves"].__setitem__(2, f["waves"][2].model_copy(update={"tenants": (n,)})),
        ("waves", 2, "tenants", 0),
        "team-a",
    ),
    "waves.bridges": (
        lambda f, n: _wave_bridge(f, n),
        ("waves", 2, "bridges", 0),
        "b",
    ),
    "workloads.movesIn": (
        lambda f, n: f.update(workloads=[_workload(moves_in=n)]),
        ("workloads", 0, "movesIn"),
        "claims",
    ),
    "workloads.tier": (
        lambda f, n: f.update(workloads=[_workload(tier=n)]),
        ("workloads", 0, "tier"),
        "full",
    ),
    "nimServices.movesIn": (
        lambda f, n: f.update(nim_services=[_nim(moves_in=n)]),
        ("nimServices", 0, "movesIn"),
        "claims",
    ),
    "nimServices.tier": (
        lambda f, n: f.update(nim_services=[_nim(tier=n)]),
        ("nimServices", 0, "tier"),
        "full",
    ),
    "validation.tenant": (
        lambda f, n: f.update(validation=ValidationWorkload(tenant=n, claim_template="one-gpu")),
        ("validation", "tenant"),
        "team-a",
    ),
}


def _wave_bridge(fields: dict[str, Any], name: str) -> None:
    fields["bridges"] = [BridgeClass(name="b", extended_resource_name="example.com/gpu")]
    fields["waves"][2] = fields["waves"][2].model_copy(update={"bridges": (name,)})


def _workload(**changes: str) -> Workload:
    fields = {"kind": "Deployment", "namespace": "team-a", "name": "w", "gpus": 1, "tier": "full"}
    return Workload(**(fields | {"moves_in": "claims"} | changes))


def _nim(**changes: str) -> NimService:
    fields = {"name": "llm", "namespace": "team-a", "tier": "full", "moves_in": "claims"}
    return NimService(**(fields | changes))


_DEFINED = {"base", "pilot", "claims", "cutover", "full", "full-b", "team-a", "one-gpu", "old", "new", "b"}
_NAMES = st.from_regex(r"\A[a-z][a-z0-9-]{0,20}[a-z0-9]\Z").filter(lambda n: n not in _DEFINED)


@settings(max_examples=100)
@given(field=st.sampled_from(sorted(_REFERENCES)), name=_NAMES)
def test_any_dangling_name_built_through_the_sdk_is_located(field: str, name: str) -> None:
    set_name, loc, _ = _REFERENCES[field]
    fields = lab_platform_fields()
    set_name(fields, name)
    with pytest.raises(ValidationError) as exc:
        Platform(**fields)
    found = _located(exc.value)
    assert loc in found, f"{format_loc(loc)} not in {sorted(map(format_loc, found))}"
    assert repr(name) in found[loc]
    assert "is not defined" in found[loc]


@pytest.mark.parametrize("field", sorted(_REFERENCES))
def test_each_reference_field_takes_a_defined_name(field: str) -> None:
    """The property's builders make valid platforms: what fails there is the dangling name."""
    set_name, _, defined = _REFERENCES[field]
    fields = lab_platform_fields()
    if field == "tenants.tiers":
        fields["tiers"] = [*fields["tiers"], ServiceTier(name="full-b", device_type="gpu")]
    set_name(fields, defined)
    assert isinstance(Platform(**fields), Platform)


def test_the_sdk_lab_is_the_spec_lab() -> None:
    from tests.specs import minimal_spec

    assert platform_document(lab_platform()) == platform_document(
        Platform.model_validate({"name": "lab", **minimal_spec()["spec"]})
    )
