"""Hand-written scenarios whose answer is known from the controllers' source (cited per test)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpuplatform.labels import DEPLOY_LABEL_PREFIX
from gpuplatform.simulate import jobs
from gpuplatform.simulate.driver_manager import PAUSED, _paused, _restored
from gpuplatform.simulate.jobs import retries
from gpuplatform.simulate.model import Cluster, DeviceClassState, Workload, tolerates
from gpuplatform.simulate.scheduler import bridge_class
from tests.simulate.helpers import sim_spec, simulate, violations
from tests.simulate.test_known_failures import _replayer


def _walk(tmp_path: Path, engine: str = "flux") -> Any:
    replayer = _replayer(tmp_path, sim_spec(), engine)
    replayer.bootstrap()
    return replayer


def test_the_operator_fills_absent_deploy_labels_and_keeps_false(tmp_path: Path) -> None:
    # gpu-operator v26.3.1 controllers/state_manager.go addGPUStateLabels: "honor the current value"
    replayer = _walk(tmp_path)
    [old] = [g for g in replayer.world.cluster.groups if g.pool == "old"]
    assert old.labels[DEPLOY_LABEL_PREFIX + "device-plugin"] == "true"
    replayer.transition("base", "pilot")
    [new] = [g for g in replayer.world.cluster.groups if g.pool == "new"]
    assert new.labels[DEPLOY_LABEL_PREFIX + "device-plugin"] == "false"
    assert new.labels[DEPLOY_LABEL_PREFIX + "container-toolkit"] == "true"
    assert "device-plugin" not in new.operands and not new.allocatable_gpu


def test_a_gone_device_plugin_leaves_its_pods_running(tmp_path: Path) -> None:
    # kubelet devicemanager: PluginDisconnected marks the devices unhealthy (allocatable 0); the pods
    # that hold them are not evicted by the kubelet
    replayer = _walk(tmp_path)
    world = replayer.world
    [new] = [g for g in world.cluster.groups if g.pool == "new"]
    holder = next(w for w in world.cluster.workloads if w.group == new.id)
    new.set_label(DEPLOY_LABEL_PREFIX + "device-plugin", "false", "test")
    world.settle()
    assert holder.phase == "running" and holder.allocator == "device-plugin" and new.allocatable_gpu == 0


def test_the_newest_class_serves_an_extended_resource_ties_by_name() -> None:
    # staging/src/k8s.io/dynamic-resource-allocation/deviceclass/extendedresourcecache
    cluster = Cluster([])
    cluster.classes = {
        "b": DeviceClassState("b", "true", "nvidia.com/gpu", 2, "x"),
        "a": DeviceClassState("a", "true", "nvidia.com/gpu", 2, "x"),
        "old": DeviceClassState("old", "true", "nvidia.com/gpu", 1, "x"),
        "other": DeviceClassState("other", "true", "example.com/gpu", 9, "x"),
    }
    assert bridge_class(cluster) == "a"
    del cluster.classes["a"], cluster.classes["b"]
    assert bridge_class(cluster) == "old"


def test_the_driver_manager_pauses_true_keeps_false_and_restores() -> None:
    # NVIDIA/k8s-driver-manager v0.10.0 cmd/driver-manager/main.go maybeSetPaused / maybeSetTrue
    assert (_paused("true"), _paused("false"), _paused(""), _paused(PAUSED)) == (PAUSED, "false", "", PAUSED)
    assert _paused("custom") == f"custom_{PAUSED}"
    assert (_restored(PAUSED), _restored(f"custom_{PAUSED}"), _restored("false")) == (
        "true",
        "custom",
        "false",
    )


@pytest.mark.parametrize(
    ("toleration", "holds"),
    [
        ({"operator": "Exists"}, True),
        ({"key": "k", "operator": "Exists"}, True),
        ({"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}, True),
        ({"key": "k", "operator": "Equal", "value": "w"}, False),
        ({"key": "k", "operator": "Exists", "effect": "NoExecute"}, False),
    ],
)
def test_tolerations_match_as_the_api_does(toleration: dict[str, Any], holds: bool) -> None:
    # k8s.io/api core/v1 toleration.go ToleratesTaint
    assert tolerates([toleration], {"key": "k", "value": "v", "effect": "NoSchedule"}) is holds


def test_a_job_that_ignores_exit_3_retries_by_itself() -> None:
    # Kubernetes Job podFailurePolicy: an Ignore rule does not count towards backoffLimit
    rule = {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [3]}}
    assert retries({"spec": {"podFailurePolicy": {"rules": [rule]}}})
    assert not retries({"spec": {"backoffLimit": 0}})


def test_a_pod_whose_claim_cannot_be_unprepared_hangs(tmp_path: Path) -> None:
    # kubernetes/kubernetes#129402: without the kubelet plugin the claim is never unprepared
    replayer = _walk(tmp_path)
    replayer.transition("base", "pilot")
    replayer.transition("pilot", "claims")
    world = replayer.world
    [new] = [g for g in world.cluster.groups if g.pool == "new"]
    pod = Workload(
        "p", "team-a", "claim", 1, "test", group=new.id, allocator="dra", phase="terminating", moves=True
    )
    world.cluster.workloads.append(pod)
    new.set_label("nvidia.com/dra-kubelet-plugin", None, "test")
    new.kubelet_plugin = "absent"
    world.checks = []
    world.settle()
    assert pod.phase == "stuck-terminating"


@pytest.mark.parametrize("engine", ["argocd", "flux"])
def test_an_unchanged_failed_job_is_not_run_again_by_flux_but_a_hook_is_by_argo(
    tmp_path: Path, engine: str
) -> None:
    # fluxcd/pkg ssa Apply skips an object that has not drifted; gitops-engine recreates a
    # BeforeHookCreation hook on every sync attempt
    replayer = _walk(tmp_path, engine)
    world = replayer.world
    wave = replayer.rendered("base")
    gate = next(o for u in wave.units for o in u.objects if o["kind"] == "Job")
    key = f"{gate['metadata']['namespace']}/{gate['metadata']['name']}"
    world.cluster.jobs[key] = "failed: earlier"
    outcome = replayer.engine.sync(world, wave)
    assert bool(outcome) is (engine == "flux")


def test_claim_pilot_fails_when_the_validation_pod_ends_before_the_gate_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # kubernetes pkg/controller/resourceclaim: the generated claim of a finished pod is deleted, so
    # a probe that does not keep running (it sleeps in #10's render) leaves the gate nothing to read
    monkeypatch.setattr(jobs, "holds_claim", lambda pod: False)
    doc = sim_spec()
    doc["spec"]["validation"] = {"tenant": "team-a", "claimTemplate": "one-gpu"}
    report = simulate(tmp_path, doc, "pilot", "claims", engines=("flux",))
    [(_, _, _, violation)] = violations(report)
    assert violation.invariant == "sync-completes" and "gate-claim-pilot" in violation.message


def test_claim_pilot_holds_with_the_rendered_sleeping_probe(tmp_path: Path) -> None:
    doc = sim_spec()
    doc["spec"]["validation"] = {"tenant": "team-a", "claimTemplate": "one-gpu"}
    report = simulate(tmp_path, doc, "pilot", "claims", engines=("flux",))
    assert violations(report) == []
