"""A remote cluster's child Applications: `<platform>-apps` is synced by hand with the runbook's
commands, and `simulate` replays exactly those commands, prune semantics included."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpuplatform.load.stacks import load_stack
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.runbook_steps import argocd_apps_commands
from gpuplatform.simulate import replay
from tests.simulate.helpers import sim_spec, simulate, violations
from tests.specs import write_spec

REMOTE = "https://lab-api.example.com:6443"


def _remote() -> dict[str, Any]:
    doc = sim_spec()
    doc["spec"]["delivery"]["clusterServer"] = REMOTE
    return doc


def test_the_rollback_command_prunes_and_waits_for_the_driver_application(tmp_path: Path) -> None:
    (loaded,) = load_stack(write_spec(tmp_path / "lab.yaml", _remote()))
    plan = plan_platform(loaded.platform)
    commands = argocd_apps_commands(plan, plan.wave("pilot"), plan.wave("base"))
    assert commands[0] == "argocd app sync lab-apps --prune"
    assert commands[1:] == (
        "kubectl -n argocd wait --for=delete application/lab-dra-driver-nvidia-gpu --timeout=15m",
    )


def test_the_remote_rollback_removes_the_driver(tmp_path: Path) -> None:
    report = simulate(tmp_path, _remote(), "pilot", "base", engines=("argocd",))
    assert violations(report) == []
    trace = [s.text for r in report.results for s in r.tail]
    assert not any("requires pruning" in t for t in trace)


@pytest.mark.parametrize(
    ("commands", "invariant"),
    [
        (("argocd app sync lab-apps",), "leftovers"),
        (
            (
                "argocd app sync lab-apps",
                "kubectl -n argocd wait --for=delete application/lab-dra-driver-nvidia-gpu --timeout=15m",
            ),
            "argocd-apps",
        ),
    ],
)
def test_a_sync_without_prune_leaves_the_driver_and_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, commands: tuple[str, ...], invariant: str
) -> None:
    # GIVEN the runbook's old command: `argocd app sync` prunes nothing without --prune
    monkeypatch.setattr(replay, "argocd_apps_commands", lambda plan, a, b: commands)
    # WHEN the rollback is replayed
    report = simulate(tmp_path, _remote(), "pilot", "base", engines=("argocd",))
    # THEN the driver's Application is still there
    [(_, _, _, violation)] = violations(report, late=False)
    assert violation.invariant == invariant
    assert "dra-driver" in " ".join(violation.objects) or "dra" in violation.message
