"""The runbook holds every step the model relies on: each manual step `simulate` takes, around a
transition or a node's maintenance, is one a rendered runbook tells the operator to take (#38, item 3).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpuplatform.load.stacks import LoadedPlatform, load_stack
from gpuplatform.plan.steps import Step
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.runbooks import render_runbooks
from gpuplatform.simulate import replay
from gpuplatform.simulate.run import prepare
from gpuplatform.simulate.world import World
from tests.simulate.helpers import sim_spec
from tests.specs import write_spec

STACKS = Path(__file__).resolve().parents[2] / "stacks"


def _by_hand(doc: dict[str, Any]) -> dict[str, Any]:
    """Driver upgrades by hand (`autoUpgrade: false`) and a pool without the operator-validator."""
    doc["spec"]["gpuOperator"]["values"] = {"driver": {"upgradePolicy": {"autoUpgrade": False}}}
    doc["spec"]["nodePools"][1]["operatorValidator"] = False
    return doc


def _loaded(tmp_path: Path, name: str) -> list[LoadedPlatform]:
    if name == "by-hand":
        return load_stack(write_spec(tmp_path / "lab.yaml", _by_hand(sim_spec())))
    return load_stack(STACKS / name)


def _section(text: str, heading: str) -> str:
    start = text.index(f"\n## {heading}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


@pytest.mark.parametrize("name", ["reference.py", "mixed-fleet.yaml", "nim-lab.yaml", "by-hand"])
def test_every_manual_step_the_replay_takes_is_in_a_runbook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    # GIVEN the manual steps the replay takes, recorded as it applies them
    taken: list[tuple[str, str, Step]] = []
    original = replay.apply_manual

    def record(world: World, step: Step, source: str, target: str) -> None:
        taken.append((source, target, step))
        original(world, step, source, target)

    monkeypatch.setattr(replay, "apply_manual", record)
    for loaded in _loaded(tmp_path, name):
        taken.clear()
        for engine in loaded.platform.delivery.engines:  # one engine at a time: in this process
            assert not prepare(loaded, None, None, (engine,)).replay().failed
        plan = plan_platform(loaded.platform)
        runbooks = render_runbooks(plan, {})
        files = {s.name: runbooks[f"{s.dir_name}.md"] for s in plan.waves}
        index = {s.name: s.index for s in plan.waves}
        assert taken
        # THEN each is rendered where the operator reads it
        for source, target, step in taken:
            said = step.what[:1].upper() + step.what[1:]
            if source == target:  # around a restart or a driver upgrade of the active wave
                where = _section(files[target], "Node maintenance while this wave is active")
            elif abs(index[source] - index[target]) == 1:
                forward = index[target] > index[source]
                text = files[target] if forward else files[source]
                later = plan.waves[max(index[source], index[target])]
                where = _section(
                    text, f"From {plan.waves[index[source]].dir_name}" if forward else "Rollback"
                )
                assert later.name in (source, target)
            else:  # a jump: `plan --from/--to` prints it, its steps are the adjacent ones'
                where = "".join(files.values())
            assert said in where or f": {step.what}." in where, (loaded.platform.name, source, target, step)
