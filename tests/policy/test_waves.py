"""Wave order, drains and alpha features: GP130-GP133, GP140, GP270, GP271 (GP134 retired)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpuplatform.errors import InputError
from gpuplatform.policy.explain import explain_rule
from gpuplatform.policy.rules import RULES
from tests.policy.helpers import codes, findings
from tests.specs import minimal_spec


def _waves(doc: dict[str, Any]) -> list[dict[str, Any]]:
    waves: list[dict[str, Any]] = doc["spec"]["waves"]
    return waves


def _validated() -> dict[str, Any]:
    """The minimal spec with a driver-validation wave and a later scale wave."""
    doc = minimal_spec()
    doc["spec"]["nodePools"].append({"name": "more", "nodes": ["gpu-03"], "product": "H100-80GB"})
    _waves(doc).insert(2, {"name": "validate", "stage": "driver-validation"})
    _waves(doc).insert(4, {"name": "scale", "stage": "scale"})
    return doc


def test_gp130_pool_move_and_claim_change_in_one_wave(tmp_path: Path) -> None:
    # GIVEN a pool that migrates in the wave that also adds the tenant's claims
    doc = _validated()
    doc["spec"]["nodePools"][2]["migratesIn"] = "scale"
    _waves(doc)[4]["tenants"] = ["team-a"]
    _waves(doc)[3]["tenants"] = []
    # WHEN / THEN the wave is refused, and the hint names the split the rule needs
    found = [p for p in findings(tmp_path, doc) if p.code == "GP130"]
    assert [p.loc for p in found] == ["spec.waves[4]"]
    assert "migrate pool(s) more in a wave of their own (spec.nodePools[2].migratesIn)" in found[0].hint
    assert "tenant team-a" in found[0].hint


def test_gp130_a_drain_wave_alone_does_not_split_the_changes(tmp_path: Path) -> None:
    # GIVEN the GP130 case with a drain wave inserted before the wave that does both
    doc = _validated()
    doc["spec"]["nodePools"][2]["migratesIn"] = "scale"
    _waves(doc)[4]["tenants"] = ["team-a"]
    _waves(doc)[3]["tenants"] = []
    _waves(doc).insert(4, {"name": "drain", "stage": "drain"})
    # THEN it still fires: the drain wave changes no state
    assert "GP130" in codes(tmp_path, doc)


def test_gp130_following_the_hint_clears_it(tmp_path: Path) -> None:
    # GIVEN the GP130 case, split as the hint says: the pool gets a wave of its own after 'scale'
    doc = _validated()
    _waves(doc)[4]["tenants"] = ["team-a"]
    _waves(doc)[3]["tenants"] = []
    _waves(doc).insert(5, {"name": "move", "stage": "scale"})
    doc["spec"]["nodePools"][2]["migratesIn"] = "move"
    # THEN no finding
    assert "GP130" not in codes(tmp_path, doc)


def test_gp270_drain_wave_before_a_pool_move_drains_it(tmp_path: Path) -> None:
    doc = _validated()
    doc["spec"]["nodePools"][2]["migratesIn"] = "scale"
    _waves(doc).insert(4, {"name": "drain", "stage": "drain"})
    assert "GP270" not in codes(tmp_path, doc)


def test_gp270_drain_wave_that_drains_nothing(tmp_path: Path) -> None:
    # GIVEN a drain wave whose next wave moves no pool
    doc = _validated()
    doc["spec"]["nodePools"][2]["migratesIn"] = "scale"
    _waves(doc).insert(3, {"name": "drain", "stage": "drain"})
    # THEN a warning at the drain wave says it is not needed
    (found,) = [p for p in findings(tmp_path, doc) if p.code == "GP270"]
    assert (found.loc, found.severity) == ("spec.waves[3]", "warning")
    assert "drains nothing: the next wave 'claims' moves no pool" in found.message


def test_gp271_a_pool_migrating_in_a_drain_wave_is_refused(tmp_path: Path) -> None:
    # GIVEN a pool whose migratesIn names the drain wave itself
    doc = _validated()
    _waves(doc).insert(4, {"name": "drain", "stage": "drain"})
    doc["spec"]["nodePools"][2]["migratesIn"] = "drain"
    # THEN an error at the pool's migratesIn, whose hint names the wave after the drain
    (found,) = [p for p in findings(tmp_path, doc) if p.code == "GP271"]
    assert (found.loc, found.severity) == ("spec.nodePools[2].migratesIn", "error")
    assert "migrates in drain wave 'drain'" in found.message
    assert found.hint == "move it in the wave after the drain: migratesIn: scale"


def test_gp271_following_the_hint_clears_it_and_the_drain_wave_drains_the_pool(tmp_path: Path) -> None:
    # GIVEN the GP271 case, fixed as the hint says
    doc = _validated()
    _waves(doc).insert(4, {"name": "drain", "stage": "drain"})
    doc["spec"]["nodePools"][2]["migratesIn"] = "scale"
    # THEN neither GP271 nor GP270: the drain wave drains the pool the next wave moves
    assert {"GP270", "GP271"}.isdisjoint(codes(tmp_path, doc))


def test_gp130_separate_waves_pass(tmp_path: Path) -> None:
    doc = _validated()
    doc["spec"]["nodePools"][2]["migratesIn"] = "scale"
    assert "GP130" not in codes(tmp_path, doc)


def test_gp131_pool_migrating_before_driver_validation(tmp_path: Path) -> None:
    doc = minimal_spec()
    doc["spec"]["nodePools"][1]["migratesIn"] = "claims"
    found = [p for p in findings(tmp_path, doc) if p.code == "GP131"]
    assert [p.loc for p in found] == ["spec.nodePools[1].migratesIn"]


def test_gp131_pool_in_baseline_is_refused(tmp_path: Path) -> None:
    doc = minimal_spec()
    doc["spec"]["nodePools"][1]["migratesIn"] = "base"
    assert "GP131" in codes(tmp_path, doc)


def test_gp131_pilot_pool_and_pools_after_validation_pass(tmp_path: Path) -> None:
    doc = _validated()
    doc["spec"]["nodePools"][2]["migratesIn"] = "scale"
    assert "GP131" not in codes(tmp_path, doc)


def _bridge_in(wave: int) -> dict[str, Any]:
    doc = minimal_spec()
    doc["spec"]["bridges"] = [{"name": "legacy"}]
    _waves(doc)[wave]["bridges"] = ["legacy"]
    return doc


def test_gp132_bridge_before_the_native_claim_pilot(tmp_path: Path) -> None:
    found = [p for p in findings(tmp_path, _bridge_in(1)) if p.code == "GP132"]
    assert [p.loc for p in found] == ["spec.waves[1].bridges"]


def test_gp132_bridge_after_the_pilot_passes(tmp_path: Path) -> None:
    assert "GP132" not in codes(tmp_path, _bridge_in(3))


def _mig_tier_in(wave: int) -> dict[str, Any]:
    doc = minimal_spec()
    doc["spec"]["tiers"].append({"name": "mig", "deviceType": "mig", "migProfile": "1g.10gb"})
    _waves(doc)[wave]["tiers"] = [*_waves(doc)[wave].get("tiers", []), "mig"]
    return doc


def test_gp133_mig_tier_with_the_first_full_gpu_tier(tmp_path: Path) -> None:
    found = [p for p in findings(tmp_path, _mig_tier_in(2)) if p.code == "GP133"]
    assert [p.loc for p in found] == ["spec.waves[2].tiers[1]"]


def test_gp133_mig_tier_after_the_full_gpu_pilot_passes(tmp_path: Path) -> None:
    assert "GP133" not in codes(tmp_path, _mig_tier_in(3))


def test_a_wave_after_the_final_cutover_is_refused_at_load_so_gp134_is_retired(tmp_path: Path) -> None:
    # GIVEN a wave after the final cutover (what GP134 used to catch: pools or workloads moving later)
    doc = minimal_spec()
    _waves(doc).append({"name": "late", "stage": "scale"})
    # THEN the spec cannot be loaded, and GP134 explains why it is retired
    with pytest.raises(InputError) as caught:
        findings(tmp_path, doc)
    assert [p.loc for p in caught.value.problems] == ["spec.waves[3].stage", "spec.waves[4].stage"]
    assert "GP134" not in RULES
    assert explain_rule("GP134").startswith("GP134 (retired):")


def test_gp140_alpha_driver_gate_with_a_final_cutover(tmp_path: Path) -> None:
    doc = minimal_spec()
    doc["spec"]["draDriver"]["featureGates"] = {"MPSSupport": True}
    found = [p for p in findings(tmp_path, doc) if p.code == "GP140"]
    assert [p.loc for p in found] == ["spec.draDriver.featureGates.MPSSupport"]
    assert "'cutover'" in found[0].message


def test_gp140_sharing_tier_in_a_production_wave(tmp_path: Path) -> None:
    doc = minimal_spec()
    doc["spec"]["tiers"][0]["sharing"] = "time-slicing"
    _waves(doc)[2]["production"] = True
    found = [p for p in findings(tmp_path, doc) if p.code == "GP140"]
    assert [p.loc for p in found] == ["spec.tiers[0].sharing"]
    assert "'claims'" in found[0].message


def test_gp140_accepted_or_non_production_alpha_passes(tmp_path: Path) -> None:
    accepted = minimal_spec()
    accepted["spec"]["draDriver"]["featureGates"] = {"MPSSupport": True}
    accepted["spec"]["accept"] = {"alphaFeatures": ["MPSSupport"]}
    assert "GP140" not in codes(tmp_path, accepted)
    lab = minimal_spec()
    lab["spec"]["draDriver"]["featureGates"] = {"MPSSupport": True}
    lab["spec"]["waves"] = lab["spec"]["waves"][:3]
    assert "GP140" not in codes(tmp_path, lab)


def test_gp115_sharing_tier_without_the_driver_gate(tmp_path: Path) -> None:
    doc = minimal_spec()
    doc["spec"]["tiers"][0]["sharing"] = "mps"
    found = [p for p in findings(tmp_path, doc) if p.code == "GP115"]
    assert [p.loc for p in found] == ["spec.tiers[0].sharing"]
    assert "MPSSupport" in found[0].message


def test_gp115_sharing_tier_with_its_gate_or_exclusive_tier_passes(tmp_path: Path) -> None:
    doc = minimal_spec()
    doc["spec"]["tiers"][0]["sharing"] = "time-slicing"
    doc["spec"]["draDriver"]["featureGates"] = {"TimeSlicingSettings": True}
    assert "GP115" not in codes(tmp_path, doc)
    assert "GP115" not in codes(tmp_path, minimal_spec())
