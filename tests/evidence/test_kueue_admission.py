"""The `kueue-admission` evidence: a migrated namespace's Kueue workload never waits for a GPU resource
its ClusterQueue does not cover (Workloads as Kueue's job controller makes them from a Job)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpuplatform.evidence.evaluate import evaluate_gate
from gpuplatform.gates import EVIDENCE_CHECKS
from gpuplatform.kueue.render import render_kueue
from gpuplatform.load.stacks import load_stack
from gpuplatform.plan.waves import Plan, plan_platform
from gpuplatform.snapshot.read import load_snapshot
from gpuplatform.testing import Cluster
from tests.conftest import REPO

GATE = next(g for g in EVIDENCE_CHECKS if g.id == "kueue-admission")


def _plan() -> Plan:
    return plan_platform(load_stack(REPO / "stacks" / "kueue-fleet.yaml")[0].platform)


def _queue(plan: Plan, wave: str) -> dict[str, Any]:
    """The ClusterQueue as the cluster serves it after the wave synced: the rendered spec, active."""
    (queue,) = [o for o in render_kueue(plan, plan.wave(wave)) if o["kind"] == "ClusterQueue"]
    return {**queue, "status": {"conditions": [{"type": "Active", "status": "True", "reason": "Ready"}]}}


def _workload(claims: bool, admitted: bool) -> dict[str, Any]:
    """Kueue's Workload of the training Job: a claim template after the conversion, else nvidia.com/gpu."""
    container: dict[str, Any] = {"name": "train", "image": "trainer"}
    spec: dict[str, Any] = {"containers": [container]}
    if claims:
        container["resources"] = {"claims": [{"name": "gpu"}]}
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "train-gpu"}]
    else:
        container["resources"] = {"requests": {"nvidia.com/gpu": "8"}}
    condition = (
        {"type": "Admitted", "status": "True", "reason": "Admitted"}
        if admitted
        else {
            "type": "QuotaReserved",
            "status": "False",
            "reason": "Pending",
            "message": "insufficient quota",
        }
    )
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "job-train-1a2b3", "namespace": "training"},
        "spec": {
            "queueName": "training",
            "podSets": [{"name": "main", "count": 1, "template": {"spec": spec}}],
        },
        "status": {"conditions": [condition]},
    }


def _judge(tmp_path: Path, wave: str, kinds: dict[str, Any]) -> Any:
    plan = _plan()
    snapshot = load_snapshot(Cluster(kinds=kinds).write(tmp_path / "snap"))
    return evaluate_gate(GATE, plan, plan.wave(wave), snapshot)


def test_converted_job_admitted_is_proof(tmp_path: Path) -> None:
    result = _judge(
        tmp_path, "apps", {"workloads": [_workload(True, True)], "clusterqueues": [_queue(_plan(), "apps")]}
    )
    assert result.status == "held", result.as_dict()


def test_pending_for_the_logical_resource_the_queue_does_not_cover(tmp_path: Path) -> None:
    """The cluster still serves the baseline ClusterQueue (only nvidia.com/gpu) in the apps wave."""
    result = _judge(
        tmp_path, "apps", {"workloads": [_workload(True, False)], "clusterqueues": [_queue(_plan(), "base")]}
    )
    assert result.status == "broken"
    assert result.findings == [
        "Workload training/job-train-1a2b3 is pending for fleet.example.com/gpu, which no flavor of "
        "ClusterQueue training covers"
    ]


def test_legacy_job_pending_after_the_last_pool_moved(tmp_path: Path) -> None:
    result = _judge(
        tmp_path,
        "cutover",
        {"workloads": [_workload(False, False)], "clusterqueues": [_queue(_plan(), "cutover")]},
    )
    assert [f.split(",")[0] for f in result.findings] == [
        "Workload training/job-train-1a2b3 is pending for nvidia.com/gpu"
    ]


def test_inactive_or_missing_queue(tmp_path: Path) -> None:
    queue = _queue(_plan(), "apps")
    queue["status"]["conditions"] = [
        {
            "type": "Active",
            "status": "False",
            "reason": "FlavorNotFound",
            "message": "Can't admit new workloads",
        }
    ]
    inactive = _judge(tmp_path / "a", "apps", {"workloads": [], "clusterqueues": [queue]})
    assert inactive.status == "broken"
    missing = _judge(tmp_path / "b", "apps", {"workloads": [], "clusterqueues": []})
    assert missing.findings == ["ClusterQueue training of migrated namespace training does not exist"]


def test_unread_kinds_are_unknown(tmp_path: Path) -> None:
    result = _judge(tmp_path, "apps", {"workloads": None, "clusterqueues": [_queue(_plan(), "apps")]})
    assert result.status == "unknown"


def test_a_wave_before_any_queue_has_a_dra_pool_needs_no_kueue_kinds(tmp_path: Path) -> None:
    result = _judge(tmp_path, "base", {"workloads": None, "clusterqueues": None})
    assert result.status == "held"
