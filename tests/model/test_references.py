"""Cross-references: every dangling or duplicate name is reported with its field path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from pydantic import ValidationError

from gpuplatform.cli import main
from gpuplatform.errors import format_loc
from gpuplatform.model import Platform
from tests.conftest import REPO
from tests.specs import minimal_spec, write_spec


def _spec_errors(body: dict[str, Any]) -> list[tuple[tuple[int | str, ...], str]]:
    """(spec path, message) of every error the Platform raises on itself, as the loader prints them."""
    try:
        Platform.model_validate(body)
    except ValidationError as exc:
        return [(("spec", *e["loc"]), e["msg"]) for e in exc.errors()]
    return []


def _errors(mutate: object) -> list[tuple[tuple[int | str, ...], str]]:
    doc = minimal_spec()
    assert callable(mutate)
    mutate(doc["spec"])
    return _spec_errors({"name": "lab", **doc["spec"]})


def test_a_valid_spec_has_no_reference_errors() -> None:
    assert _errors(lambda s: None) == []


def test_dangling_wave_tier_and_tenant_names_are_located() -> None:
    def mutate(spec: dict) -> None:  # type: ignore[type-arg]
        spec["nodePools"][1]["migratesIn"] = "pilott"
        spec["tenants"][0]["tiers"] = ["full", "fast"]
        spec["waves"][2]["tenants"] = ["team-b"]
        spec["activeWave"] = "nowhere"

    locs = {loc: msg for loc, msg in _errors(mutate)}
    assert locs[("spec", "nodePools", 1, "migratesIn")] == (
        "wave 'pilott' is not defined in spec.waves (defined: base, pilot, claims, cutover)"
    )
    assert (
        locs[("spec", "tenants", 0, "tiers", 1)] == "tier 'fast' is not defined in spec.tiers (defined: full)"
    )
    assert locs[("spec", "waves", 2, "tenants", 0)] == (
        "tenant 'team-b' is not defined in spec.tenants (defined: team-a)"
    )
    assert locs[("spec", "activeWave")] == (
        "wave 'nowhere' is not defined in spec.waves (defined: base, pilot, claims, cutover)"
    )


def test_an_unknown_name_with_nothing_defined_says_so() -> None:
    locs = {loc: msg for loc, msg in _errors(lambda s: s.update(tiers=[], tenants=[]))}
    assert (
        locs[("spec", "waves", 2, "tiers", 0)] == "tier 'full' is not defined in spec.tiers (none is defined)"
    )


def test_duplicate_names_point_at_the_second_definition() -> None:
    def mutate(spec: dict) -> None:  # type: ignore[type-arg]
        spec["tiers"].append({"name": "full", "deviceType": "mig"})

    assert _errors(mutate) == [
        (("spec", "tiers", 1, "name"), "'full' is already defined at spec.tiers[0]"),
        (
            ("spec", "tiers", 1, "name"),
            "DeviceClass 'full.lab.example.com' is also rendered from spec.tiers[0].name",
        ),
    ]


def _stages(*stages: str) -> list[str]:
    doc = minimal_spec()["spec"]
    doc["waves"] = [{"name": f"w{i}", "stage": s} for i, s in enumerate(stages)]
    doc["activeWave"] = "w0"
    for pool in doc["nodePools"]:
        pool.pop("migratesIn", None)
    doc["tenants"] = []
    return [f"{format_loc(loc)}: {msg}" for loc, msg in _spec_errors({"name": "lab", **doc})]


def test_canonical_stage_order_with_drains_between_any_two_and_repeats_passes() -> None:
    assert (
        _stages(
            "baseline", "pilot-pool", "drain", "driver-validation", "scale", "scale", "drain", "final-cutover"
        )
        == []
    )
    assert _stages("baseline", "application") == []


@pytest.mark.parametrize(
    ("stages", "expected"),
    [
        (
            ("pilot-pool", "baseline"),
            [
                "spec.waves[0].stage: the first wave must be stage baseline (wave 'w0' is pilot-pool)",
                "spec.waves[1].stage: only the first wave is stage baseline (wave 'w1' is baseline)",
            ],
        ),
        (
            ("baseline", "final-cutover", "scale"),
            [
                "spec.waves[1].stage: final-cutover must be the last wave ('w2' comes after it)",
                "spec.waves[2].stage: stage scale comes after final-cutover (wave 'w1', spec.waves[1]): stages run "
                "in the order baseline, pilot-pool, driver-validation, native-claim-pilot, compatibility-bridge, "
                "application, nim-non-production, scale, final-cutover, drain between any two",
            ],
        ),
        (
            ("baseline", "application", "drain", "native-claim-pilot"),
            [
                "spec.waves[3].stage: stage native-claim-pilot comes after application (wave 'w1', spec.waves[1]): "
                "stages run in the order baseline, pilot-pool, driver-validation, native-claim-pilot, "
                "compatibility-bridge, application, nim-non-production, scale, final-cutover, drain between any two",
            ],
        ),
        (
            ("drain", "scale"),
            ["spec.waves[0].stage: the first wave must be stage baseline (wave 'w0' is drain)"],
        ),
        (("baseline", "drain"), ["spec.waves[1].stage: a drain wave stands between two waves, never last"]),
    ],
)
def test_stages_out_of_order_are_located(stages: tuple[str, ...], expected: list[str]) -> None:
    assert _stages(*stages) == expected


@pytest.mark.parametrize("resource", ["nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "nvidia.com/gpu.shared"])
def test_kueues_logical_resource_is_no_device_plugin_resource(tmp_path: Path, resource: str) -> None:
    # issue 39: `kueue.resource: nvidia.com/gpu` would count DRA devices and device-plugin GPUs as one quota
    doc = yaml.safe_load((REPO / "stacks" / "kueue-fleet.yaml").read_text())
    doc["spec"]["kueue"]["resource"] = resource
    spec = write_spec(tmp_path / "kueue.yaml", doc)
    result = CliRunner().invoke(main, ["check", str(spec)])
    assert result.exit_code == 2, result.output
    assert f"error: {spec}:spec.kueue.resource: " in result.stderr
    assert "the NVIDIA device plugin advertises" in result.stderr
