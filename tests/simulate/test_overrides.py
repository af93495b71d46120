"""Spec-level Helm values overrides against the transitions: what still gets through is found by the
simulator and refused by check; what the renderer's merge neutralises is proven safe."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpuplatform.charts.model import render_dra_driver, render_gpu_operator
from gpuplatform.labels import DRA_PLUGIN_LABEL
from gpuplatform.load.stacks import LoadedPlatform, load_stack
from gpuplatform.plan.waves import plan_platform
from gpuplatform.policy.rules import run_rules
from gpuplatform.render import helm_values
from gpuplatform.render.operator_handoff import operator_handoff, operator_handoff_path
from gpuplatform.render.tree import Tree, render_tree
from gpuplatform.simulate.devices import DeviceMatcher
from gpuplatform.simulate.rendered import ReleaseSpec, rendered_releases
from gpuplatform.simulate.replay import Replayer, declared_modes
from gpuplatform.simulate.run import prepare
from gpuplatform.versions import DCGM_EXPORTER_DRA_ENV
from tests.simulate.helpers import sim_spec, simulate, violations
from tests.specs import write_spec

TAINT = "gpu-scheduling.lab.example.com/mode"


def _codes(tmp_path: Path) -> set[str]:
    (loaded,) = load_stack(tmp_path / "lab.yaml")
    return {p.code for p in run_rules(loaded)}


def _with(section: str, values: dict[str, Any]) -> dict[str, Any]:
    doc = sim_spec()
    doc["spec"][section]["values"] = values
    return doc


def test_a_kubelet_plugin_selector_that_misses_the_dra_pool_is_found_and_refused(tmp_path: Path) -> None:
    # GIVEN a team selector ANDed with the switch's label (chart templates/kubeletplugin.yaml nodeSelector)
    doc = _with("draDriver", {"kubeletPlugin": {"nodeSelector": {"example.com/zone": "a"}}})
    report = simulate(tmp_path, doc, "base", "pilot")
    # THEN the pilot node gets no DRA kubelet plugin and the post gates hold the sync
    found = violations(report, late=False)
    assert {(e, v.invariant) for e, _, _, v in found} == {(e, "sync-completes") for e in ("argocd", "flux")}
    assert "runs no DRA kubelet plugin" in found[0][3].message
    assert "GP240" in _codes(tmp_path)


def test_an_eviction_label_the_kubelet_plugin_does_not_select_is_found_and_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the driver manager pausing another label (the renderer's env forced to it)
    monkeypatch.setattr(
        helm_values, "EVICTION_ENV", {"name": "NODE_LABEL_FOR_GPU_POD_EVICTION", "value": "x/y"}
    )
    report = simulate(tmp_path, sim_spec(), "base", "pilot")
    # THEN during a driver upgrade the kubelet plugin stays and holds the GPUs (k8s-driver-manager
    # evictAllGPUOperatorComponents pauses only NODE_LABEL_FOR_GPU_POD_EVICTION)
    found = violations(report, late=False)
    assert {v.invariant for *_, v in found} == {"driver-upgrade"}
    assert "GP243" in _codes(tmp_path)


def _releases(tmp_path: Path, chart: str) -> list[ReleaseSpec]:
    (loaded,) = load_stack(tmp_path / "lab.yaml")
    plan = plan_platform(loaded.platform)
    return [r for _, _, r in rendered_releases(render_tree(plan), plan) if r.chart == chart]


@pytest.mark.parametrize(
    ("section", "values"),
    [
        ("draDriver", {"kubeletPlugin": {"nodeSelector": {}}}),
        ("draDriver", {"kubeletPlugin": {"tolerations": []}}),
        (
            "gpuOperator",
            {"driver": {"manager": {"env": [{"name": "NODE_LABEL_FOR_GPU_POD_EVICTION", "value": "a/b"}]}}},
        ),
        ("gpuOperator", {"daemonsets": {"tolerations": []}}),
        ("gpuOperator", {"node-feature-discovery": {"worker": {"tolerations": []}}}),
    ],
    ids=[
        "plugin-selector-cleared",
        "plugin-tolerations-cleared",
        "eviction-label",
        "operand-tolerations",
        "nfd",
    ],
)
def test_an_override_the_merge_neutralises_is_proven_safe(
    tmp_path: Path, section: str, values: dict[str, Any]
) -> None:
    # GIVEN an override that would bring an old failure back (1, 2, 4) if the team's values won
    report = simulate(tmp_path, _with(section, values), "base", "pilot")
    # THEN the platform's values win (render/helm_values.py merge), the transition and the restart
    # and driver upgrade after it hold, and check has nothing to refuse
    assert violations(report) == []
    assert not {"GP240", "GP242", "GP243"} & _codes(tmp_path)
    for dra in _releases(tmp_path, "dra-driver-nvidia-gpu"):
        plugin = render_dra_driver(dra.version, dra.values, dra.patches)
        assert plugin.node_selector == {DRA_PLUGIN_LABEL: "true"}
        assert any(t.get("key") == TAINT for t in plugin.tolerations)
    for op in _releases(tmp_path, "gpu-operator"):
        operator = render_gpu_operator(op.version.lstrip("v"), op.values)
        assert operator.eviction_label == DRA_PLUGIN_LABEL
        assert any(t.get("key") == TAINT for t in operator.operand_tolerations)
        assert any(t.get("key") == TAINT for t in operator.nfd_tolerations)


def _unmanaged(tmp_path: Path, values: dict[str, Any] | None = None) -> tuple[LoadedPlatform, Tree, str]:
    """The operator outside gpuplatform (running with `values`): its loaded spec, rendered tree and hand-off path."""
    doc = sim_spec()
    doc["spec"]["gpuOperator"] = {"values": values} if values else {}
    (loaded,) = load_stack(write_spec(tmp_path / "lab.yaml", doc))
    plan = plan_platform(loaded.platform)
    path = operator_handoff_path(plan)
    assert path == "handoff/00-base/gpu-operator-values.json"
    return loaded, render_tree(plan), path


def test_an_unmanaged_operator_without_its_handoff_is_modelled_from_its_values_and_said_so(
    tmp_path: Path,
) -> None:
    # GIVEN the operator outside gpuplatform, its exporter already in DRA mode, and its hand-off
    # never applied
    exporter = {"dcgmExporter": {"env": [{"name": DCGM_EXPORTER_DRA_ENV, "value": "true"}]}}
    loaded, tree, path = _unmanaged(tmp_path, exporter)
    del tree.files[path]
    report = prepare(loaded, "base", "pilot", ("flux",), tree=tree).replay()
    # THEN the replay says what it assumed, and the first driver upgrade finds the DRA kubelet
    # plugin still holding the GPUs: nothing set NODE_LABEL_FOR_GPU_POD_EVICTION to its label
    assert any("no hand-off" in n for r in report.results for n in r.notes)
    [(_, _, _, violation)] = violations(report, late=False)
    assert violation.invariant == "driver-upgrade" and "NODE_LABEL_FOR_GPU_POD_EVICTION" in violation.message


def test_an_unmanaged_operator_without_its_handoff_leaves_the_exporter_blind_to_dra(tmp_path: Path) -> None:
    # GIVEN the operator outside gpuplatform with its own values, and its hand-off never applied
    loaded, tree, path = _unmanaged(tmp_path)
    del tree.files[path]
    report = prepare(loaded, "base", "pilot", ("flux",), tree=tree).replay()
    # THEN the operands gate holds the sync: the exporter on the DRA node runs without DRA mode
    [(_, _, _, violation)] = violations(report, late=False)
    assert (
        violation.invariant == "sync-completes"
        and f"runs without {DCGM_EXPORTER_DRA_ENV}=true" in violation.message
    )


def test_an_unmanaged_operator_gets_the_migration_settings_from_the_first_waves_handoff(
    tmp_path: Path,
) -> None:
    # GIVEN the operator outside gpuplatform, with the rendered hand-off
    loaded, tree, path = _unmanaged(tmp_path)
    values = json.loads(str(tree.files[path]))
    assert values["driver"]["manager"]["env"] == [helm_values.EVICTION_ENV]
    # WHEN the first wave is adopted
    plan = plan_platform(loaded.platform)
    replayer = Replayer(plan, tree, "flux", DeviceMatcher(loaded.platform), declared_modes(plan, tree))
    assert replayer.world.operator().eviction_label == ""
    replayer.bootstrap()
    # THEN the runbook step applied it, once, before the sync: the operator's driver manager evicts the plugin
    applied = [s for s in replayer.world.trace if s.actor == "runbook"]
    assert [s.text for s in applied] == [f"helm upgrade --reuse-values the running GPU Operator with {path}"]
    assert replayer.world.operator().eviction_label == DRA_PLUGIN_LABEL
    # AND every transition holds under both engines (Flux's releases folder exists in every wave:
    # tests/simulate/test_flux_finalizer.py)
    assert violations(prepare(loaded, None, None, ("argocd", "flux"), tree=tree).replay()) == []


def test_the_operator_handoff_keeps_the_teams_list_items(tmp_path: Path) -> None:
    # GIVEN team values with their own driver-manager env (Helm replaces lists)
    doc = sim_spec()
    doc["spec"]["gpuOperator"] = {
        "values": {"driver": {"manager": {"env": [{"name": "DRAIN_USE_FORCE", "value": "true"}]}}}
    }
    (loaded,) = load_stack(write_spec(tmp_path / "lab.yaml", doc))
    values = operator_handoff(plan_platform(loaded.platform))
    # THEN the hand-off's list is the team's with ours added, and nothing else of theirs
    assert values is not None
    assert values["driver"] == {
        "manager": {"env": [{"name": "DRAIN_USE_FORCE", "value": "true"}, helm_values.EVICTION_ENV]},
        **helm_values.UPGRADE_DRAIN["driver"],
    }
