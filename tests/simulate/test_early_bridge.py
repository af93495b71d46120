"""early-bridge is measured against the stages: no bridge serves unmigrated pods before compatibility-bridge."""

from __future__ import annotations

from pathlib import Path

from gpuplatform.evidence.evaluate import evaluate_gates
from gpuplatform.gates import EVIDENCE_CHECKS
from gpuplatform.load.stacks import load_stack
from gpuplatform.plan.waves import plan_platform
from gpuplatform.simulate.run import prepare
from gpuplatform.snapshot.read import load_snapshot
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


def test_evidence_on_the_early_bridges_checkpoint_breaks_early_bridge(tmp_path: Path) -> None:
    # GIVEN the early bridge of the claims wave, replayed with its checkpoints written
    doc = sim_spec()
    doc["spec"]["bridges"] = [{"name": "early"}]
    doc["spec"]["waves"][2]["bridges"] = ["early"]
    (loaded,) = load_stack(write_spec(tmp_path / "lab.yaml", doc))
    out = tmp_path / "checkpoints"
    prepare(loaded, "pilot", "claims", ("flux",), checkpoints=(out, 1)).replay()
    (broken,) = [f for f in sorted(out.iterdir()) if f.name.endswith("-violation-early-bridge")]
    # WHEN evidence judges the checkpoint where the model saw it
    plan = plan_platform(loaded.platform)
    (check,) = [g for g in EVIDENCE_CHECKS if g.id == "early-bridge"]
    (result,) = evaluate_gates([check], plan, plan.wave("claims"), load_snapshot(broken))
    # THEN the early-bridge check is broken by the bridge class and the pod it served
    assert result.status == "broken"
    assert any("serves nvidia.com/gpu (spec.extendedResourceName)" in f for f in result.findings)
    assert any("through bridge claim" in f for f in result.findings), result.findings
