"""Argo CD's automated sync as the entry Application sets it: `prune` and `selfHeal` are modelled,
not read and ignored.

gitops-engine (argo-cd v3.5.1 `gitops-engine/pkg/sync/sync_context.go`): with prune off, an object
no longer in Git is left in place and the sync succeeds; `automated.selfHeal` re-syncs an object
that drifted from Git (argo-cd `controller/appcontroller.go` `autoSync`, `selfHeal`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpuplatform.render import delivery, nodes
from gpuplatform.simulate.world import ViolationFound
from tests.simulate.helpers import sim_spec, simulate, violations
from tests.simulate.test_known_failures import _replayer


def _entry_policy(monkeypatch: pytest.MonkeyPatch, **automated: bool) -> None:
    original = delivery.entry_sync_policy

    def policy(auto: bool) -> dict[str, Any]:
        sync = original(auto)
        if "automated" in sync:
            sync["automated"] = sync["automated"] | automated
        return sync

    monkeypatch.setattr(delivery, "entry_sync_policy", policy)


def test_without_automated_prune_a_rollback_leaves_the_driver_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _entry_policy(monkeypatch, prune=False)
    report = simulate(tmp_path, sim_spec(), "pilot", "base", engines=("argocd",))
    found = {v.invariant for *_, v in violations(report, late=False)}
    assert found == {"leftovers"}


def test_with_automated_prune_the_rollback_removes_it(tmp_path: Path) -> None:
    report = simulate(tmp_path, sim_spec(), "pilot", "base", engines=("argocd",))
    assert violations(report) == []


@pytest.mark.parametrize("self_heal", [True, False])
def test_self_heal_as_set_decides_whether_drift_is_written_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, self_heal: bool
) -> None:
    """An Application owning the kubelet-plugin label writes it back during a driver upgrade only
    when it self-heals (known failure 2 in test_known_failures.py needs selfHeal)."""
    _entry_policy(monkeypatch, selfHeal=self_heal)
    replayer = _replayer(tmp_path, sim_spec(), "argocd")
    replayer.bootstrap()
    replayer.transition("base", "pilot")
    [dra] = [g for g in replayer.world.cluster.groups if g.pool == "new"]
    dra.applied[nodes.DRA_PLUGIN_LABEL] = "true"
    heals = replayer.rendered(replayer.world.target).self_heal
    assert heals is self_heal
    if self_heal:
        with pytest.raises(ViolationFound) as found:
            replayer._upgrade(dra)  # the driver upgrade as the replay runs it
        assert found.value.violation.invariant == "driver-upgrade"
    else:
        replayer._upgrade(dra)  # nothing writes the paused label back: the driver unloads
