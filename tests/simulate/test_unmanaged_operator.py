"""An unmanaged GPU Operator's device plugin (#38 item 8): no engine renders its release, so the final
cutover's `devicePlugin.enabled=false`, and the rollback's `true`, are its owner's runbook steps, which
the replay performs; the sync says nothing of it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpuplatform.load.stacks import load_stack
from gpuplatform.plan.steps import OPERATOR_DEVICE_PLUGIN, transition_steps
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.runbooks import render_runbooks
from tests.simulate.helpers import sim_spec
from tests.simulate.test_known_failures import _replayer
from tests.specs import write_spec


def _unmanaged() -> dict[str, Any]:
    doc = sim_spec()
    doc["spec"]["gpuOperator"] = {"managed": False}
    return doc


def test_the_owner_turns_the_device_plugin_off_at_the_cutover_and_on_before_the_rollback(
    tmp_path: Path,
) -> None:
    # GIVEN the cutover of a platform whose GPU Operator is not rendered
    (loaded,) = load_stack(write_spec(tmp_path / "lab.yaml", _unmanaged()))
    plan = plan_platform(loaded.platform)
    claims, cutover = plan.wave("claims"), plan.wave("cutover")
    forward, back = transition_steps(plan, claims, cutover), transition_steps(plan, cutover, claims)
    # THEN no sync unit claims to change the operator; its owner's step comes after the sync forward
    # and before the merge going back
    assert not [s for s in forward + back if s.kind == "sync" and "devicePlugin" in s.what]
    kinds = [s.kind if s.action != OPERATOR_DEVICE_PLUGIN else "owner" for s in forward]
    assert kinds.index("owner") > kinds.index("merge")
    kinds = [s.kind if s.action != OPERATOR_DEVICE_PLUGIN else "owner" for s in back]
    assert kinds.index("owner") < kinds.index("merge")
    books = render_runbooks(plan, {})
    text = books[f"{cutover.dir_name}.md"]
    assert "--reuse-values --set devicePlugin.enabled=false" in text.split("## Rollback")[0]
    assert "--reuse-values --set devicePlugin.enabled=true" in text.split("## Rollback")[1]


def test_the_replay_turns_the_operators_device_plugin_off_and_back_on(tmp_path: Path) -> None:
    replayer = _replayer(tmp_path, _unmanaged(), "argocd")
    replayer.bootstrap()
    for a, b in (("base", "pilot"), ("pilot", "claims"), ("claims", "cutover")):
        replayer.transition(a, b)
    assert replayer.world.operator().device_plugin is False
    replayer.transition("cutover", "claims")
    assert replayer.world.operator().device_plugin is True
    old = next(g for g in replayer.world.cluster.groups if g.pool == "old")
    assert old.device_plugin_registered
