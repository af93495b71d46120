"""early-bridge is measured against the stages: no bridge serves unmigrated pods before compatibility-bridge."""

from __future__ import annotations

from pathlib import Path

from gpuplatform.load.stacks import load_stack
from gpuplatform.plan.waves import plan_platform
from tests.simulate.helpers import sim_spec, simulate, violations
from tests.specs import write_spec


def test_a_bridge_declared_on_the_claims_wave_is_an_early_bridge(tmp_path: Path) -> None:
    # GIVEN a platform bridge the spec enables in the native-claim-pilot wave
    doc = sim_spec()
    doc["spec"]["bridges"] = [{"name": "early"}]
    doc["spec"]["waves"][2]["bridges"] = ["early"]
    # WHEN the transition into that wave is replayed
    report = simulate(tmp_path, doc, "pilot", "claims")
    # THEN the unmigrated pod that lands on a DRA node through it breaks early-bridge, under both engines
    found = violations(report, late=False)
    assert {(e, v.invariant) for e, _, _, v in found} == {
        ("argocd", "early-bridge"),
        ("flux", "early-bridge"),
    }
    assert "before a compatibility-bridge wave" in found[0][3].message


def test_only_a_wave_at_or_after_compatibility_bridge_with_a_bridge_allows_one(tmp_path: Path) -> None:
    doc = sim_spec()
    doc["spec"]["bridges"] = [{"name": "b"}]
    doc["spec"]["waves"].insert(3, {"name": "bridge", "stage": "compatibility-bridge", "bridges": ["b"]})
    (loaded,) = load_stack(write_spec(tmp_path / "lab.yaml", doc))
    plan = plan_platform(loaded.platform)
    assert [s.bridge_allowed for s in plan.waves] == [False, False, False, True, True]
