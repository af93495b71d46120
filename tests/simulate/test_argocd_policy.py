"""The engines' policy as the spec sets it (`delivery.argocdPrune`, `argocdSelfHeal`, `fluxPrune`,
#38 item 6): rendered, and modelled by `simulate`, not read and ignored.

gitops-engine (argo-cd v3.5.1 `gitops-engine/pkg/sync/sync_context.go`): with prune off, an object
no longer in Git is left in place and the sync succeeds; `automated.selfHeal` re-syncs an object
that drifted from Git (argo-cd `controller/appcontroller.go` `autoSync`, `selfHeal`). Flux's
kustomize-controller deletes what a Kustomization no longer builds only with `spec.prune`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpuplatform.labels import DRA_PLUGIN_LABEL
from gpuplatform.load.stacks import load_stack
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.flux_entry import render_cluster_entry
from gpuplatform.render.tree import Tree, render_tree
from gpuplatform.simulate.world import ViolationFound
from tests.simulate.helpers import sim_spec, simulate, violations
from tests.simulate.test_known_failures import _replayer
from tests.specs import write_spec


def _objects(tree: Tree) -> list[dict[str, Any]]:
    return [o for docs in tree.files.values() if isinstance(docs, list) for o in docs]


def _policy(**delivery: bool) -> dict[str, Any]:
    doc = sim_spec()
    doc["spec"]["delivery"].update(delivery)
    return doc


def test_the_default_policy_is_what_was_rendered_before(tmp_path: Path) -> None:
    (loaded,) = load_stack(write_spec(tmp_path / "lab.yaml", sim_spec()))
    tree = render_tree(plan_platform(loaded.platform))
    apps = [
        o
        for o in _objects(tree)
        if o["kind"] == "Application" and "automated" in o["spec"].get("syncPolicy", {})
    ]
    layers = [
        o
        for o in _objects(tree)
        if o["apiVersion"].startswith("kustomize.toolkit.fluxcd.io/") and "prune" in o.get("spec", {})
    ]
    assert apps and {str(a["spec"]["syncPolicy"]["automated"]) for a in apps} == {
        "{'prune': True, 'selfHeal': True}"
    }
    assert layers and all(k["spec"]["prune"] is True for k in layers)


def test_the_policy_the_spec_sets_is_rendered(tmp_path: Path) -> None:
    doc = _policy(argocdPrune=False, argocdSelfHeal=False, fluxPrune=False)
    (loaded,) = load_stack(write_spec(tmp_path / "lab.yaml", doc))
    plan = plan_platform(loaded.platform)
    tree = render_tree(plan)
    apps = {
        o["metadata"]["name"]: o["spec"]["syncPolicy"]["automated"]
        for o in _objects(tree)
        if o["kind"] == "Application" and "automated" in o["spec"].get("syncPolicy", {})
    }
    # every automated Application of the platform's tree (the stack's root, elsewhere, keeps pruning)
    assert apps and {n: a for n, a in apps.items() if a != {"prune": False, "selfHeal": False}} == {}
    prunes = {
        o["metadata"]["name"]: o["spec"]["prune"]
        for o in _objects(tree)
        if o["apiVersion"].startswith("kustomize.toolkit.fluxcd.io/")
    }
    assert prunes and set(prunes.values()) == {False}
    # clusters/<name>/: the entry that holds the chain keeps pruning (a stale layer would apply an old wave)
    assert render_cluster_entry(plan)["spec"]["prune"] is True


def test_without_automated_prune_a_rollback_leaves_the_driver_installed(tmp_path: Path) -> None:
    report = simulate(tmp_path, _policy(argocdPrune=False), "pilot", "base", engines=("argocd",))
    found = {v.invariant for *_, v in violations(report, late=False)}
    assert found == {"leftovers"}


def test_without_flux_prune_a_rollback_leaves_the_kubelet_plugin_beside_the_device_plugin(
    tmp_path: Path,
) -> None:
    report = simulate(tmp_path, _policy(fluxPrune=False), "pilot", "base", engines=("flux",))
    found = {v.invariant for *_, v in violations(report, late=False)}
    assert found == {"one-allocator"}
    (tmp_path / "on").mkdir()
    assert violations(simulate(tmp_path / "on", sim_spec(), "pilot", "base", engines=("flux",))) == []


def test_with_automated_prune_the_rollback_removes_it(tmp_path: Path) -> None:
    report = simulate(tmp_path, sim_spec(), "pilot", "base", engines=("argocd",))
    assert violations(report) == []


@pytest.mark.parametrize("self_heal", [True, False])
def test_self_heal_as_set_decides_whether_drift_is_written_back(tmp_path: Path, self_heal: bool) -> None:
    """An Application owning the kubelet-plugin label writes it back during a driver upgrade only
    when it self-heals (known failure 2 in test_known_failures.py needs selfHeal)."""
    replayer = _replayer(tmp_path, _policy(argocdSelfHeal=self_heal), "argocd")
    replayer.bootstrap()
    replayer.transition("base", "pilot")
    [dra] = [g for g in replayer.world.cluster.groups if g.pool == "new"]
    dra.applied[DRA_PLUGIN_LABEL] = "true"
    heals = replayer.rendered(replayer.world.target).self_heal
    assert heals is self_heal
    if self_heal:
        with pytest.raises(ViolationFound) as found:
            replayer._upgrade(dra)  # the driver upgrade as the replay runs it
        assert found.value.violation.invariant == "driver-upgrade"
    else:
        replayer._upgrade(dra)  # nothing writes the paused label back: the driver unloads


def test_the_runbook_says_when_the_engine_leaves_what_a_wave_removes(tmp_path: Path) -> None:
    from gpuplatform.render.runbooks import render_runbooks

    books = {}
    for name, doc in (("on", sim_spec()), ("off", _policy(argocdPrune=False))):
        (loaded,) = load_stack(write_spec(tmp_path / f"{name}.yaml", doc))
        books[name] = render_runbooks(plan_platform(loaded.platform), {})["02-claims.md"].split(
            "## Rollback"
        )[1]
    assert "The engine prunes what the target wave lacks" in books["on"]
    assert "Argo CD (`delivery.argocdPrune: false`) does not prune" in books["off"]
    assert "The engine prunes" not in books["off"]
