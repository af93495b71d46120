"""Complete replays: after a violation, every accepted transition is still replayed, or listed as not
replayed with the reason, and the summary counts them all (issue #38, item 2)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from gpuplatform.cli import main
from gpuplatform.load.stacks import load_stack
from gpuplatform.plan.waves import plan_platform
from gpuplatform.simulate.replay import replays_late
from gpuplatform.simulate.run import accepted_pairs
from tests.consistency.test_availability import _vllm
from tests.specs import write_spec


def test_after_a_violation_every_accepted_transition_has_an_outcome(tmp_path: Path) -> None:
    # GIVEN a plan whose drain wave strands vLLM (the walk breaks at claims -> drain)
    path = write_spec(tmp_path / "lab.yaml", _vllm("cutover"))
    as_json = CliRunner().invoke(main, ["simulate", str(path), "--format", "json"])
    text = CliRunner().invoke(main, ["simulate", str(path)]).stdout
    broken = json.loads(as_json.stdout)[0]
    # THEN every transition plan accepts, under each engine, is listed (the late operator's variants too)
    plan = plan_platform(load_stack(path)[0].platform)
    pairs, _ = accepted_pairs(plan)
    expected = {
        (engine, a, b, late)
        for engine in ("argocd", "flux")
        for a, b in pairs
        for late in (False, True)
        if not late or replays_late(plan, a, b)
    }
    keys = [(t["engine"], t["from"], t["to"], t["operatorLate"]) for t in broken["transitions"]]
    assert as_json.exit_code == 1
    assert sorted(keys) == sorted(expected)
    # AND each is proven, violated, or not replayed with the reason; the counts add up
    outcomes = broken["transitions"]
    assert isinstance(outcomes, list)
    skipped = [t for t in outcomes if t["notReplayed"]]
    violated = [t for t in outcomes if t["violation"]]
    assert skipped and violated
    assert all(t["violation"] is None and t["steps"] == 0 for t in skipped)
    assert {t["notReplayed"] for t in skipped} == {
        f"wave {t['from']} was never reached: the walk to it broke at claims -> drain (workload-disrupted)"
        for t in skipped
    }
    assert broken["proven"] + broken["failed"] + broken["notReplayed"] == len(outcomes)
    assert (broken["failed"], broken["notReplayed"]) == (len(violated), len(skipped))
    # AND the text says so line by line and in the summary
    assert "argocd drain -> move: not replayed: wave drain was never reached" in text
    assert (
        f"{broken['proven']} of {len(outcomes)} transition replays proven, {len(violated)} violated, "
        f"{len(skipped)} not replayed" in text
    )
