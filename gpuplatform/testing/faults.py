"""Faults a test injects into a `Cluster`: the ways a real cluster differs from a healthy one.

`inject_fault(cluster, fault, i, value)` changes the cluster one way (`FAULTS`): pods gone,
unready or finished, labels and resources moved, slices dropped or republished, devices of another
kind, claims moved, released or reserved for pods gone, logs that saw another GPU. `i` picks the
object (modulo how many there are) and `value` the new value (`VALUES` are the telling ones), so a
property test draws (fault, i, value) triples and a failing example replays exactly.
"""

from __future__ import annotations

import copy
from typing import Any

from gpuplatform.labels import DEPLOY_LABEL_PREFIX, GPU_RESOURCE
from gpuplatform.testing.cluster import Cluster

__all__ = ["FAULTS", "VALUES", "inject_fault"]

#: Every fault `inject_fault` knows.
FAULTS: tuple[str, ...] = (
    "drop-pod",
    "unready",
    "no-statuses",
    "phase",
    "move-pod",
    "mode-label",
    "drop-label",
    "deploy-label",
    "allocatable",
    "drop-node",
    "drop-slice",
    "republish",
    "device",
    "drop-memory",
    "driver",
    "claim-node",
    "release",
    "drop-claim",
    "reserve",
    "terminating",
    "claim-status",
    "bridge-claim",
    "log",
    "second-attempt",
    "claim-nodes",
    "drop-uuid",
)
#: Values that change a verdict: modes, phases, operand names, counts, "" and "x" (a name nobody uses).
VALUES: tuple[str, ...] = (
    "dra",
    "legacy",
    "",
    "Failed",
    "Succeeded",
    "Pending",
    "driver",
    "mig-manager",
    "4",
    "0",
    "gpu",
    "mig",
    "x",
)


def _pick(items: list[Any], i: int) -> Any:
    """The `i`-th item, counting round; None when there is none."""
    return items[i % len(items)] if items else None


def inject_fault(cluster: Cluster, fault: str, i: int, value: str) -> None:
    """One change a cluster may show: pods gone, unready or finished, labels and resources moved,
    slices dropped or republished, devices of another kind, claims and logs (`FAULTS`); a fault
    with nothing to act on (no pod, no claim) changes nothing."""
    if fault not in FAULTS:
        raise ValueError(f"unknown fault {fault!r}: one of {', '.join(FAULTS)}")
    pods, nodes, slices = cluster.list("pods"), cluster.list("nodes"), cluster.list("resourceslices")
    pod, node, slice_ = _pick(pods, i), _pick(nodes, i), _pick(slices, i)
    if fault == "drop-pod" and pod is not None:
        pods.remove(pod)
    elif fault == "unready" and pod is not None:
        pod["status"]["containerStatuses"] = [
            {"name": "main", "ready": False},
            {"name": value, "ready": True},
        ]
    elif fault == "no-statuses" and pod is not None:
        pod["status"].pop("containerStatuses", None)
    elif fault == "phase" and pod is not None:
        pod["status"]["phase"] = value
    elif fault == "move-pod" and pod is not None and node is not None:
        pod["spec"]["nodeName"] = _pick(nodes, i + 1)["metadata"]["name"]
    elif fault == "mode-label" and node is not None:
        labels = node["metadata"]["labels"]
        for key in [k for k in labels if k.endswith("/mode")]:
            labels[key] = value
    elif fault == "drop-label" and node is not None:
        labels = node["metadata"]["labels"]
        labels.pop(_pick(sorted(labels), i), None)
    elif fault == "deploy-label" and node is not None:
        node["metadata"]["labels"][f"{DEPLOY_LABEL_PREFIX}{value}"] = _pick(["true", "false"], i)
    elif fault == "allocatable" and node is not None:
        node["status"]["allocatable"][_pick([GPU_RESOURCE, "nvidia.com/mig-1g.10gb", "cpu"], i)] = value
    elif fault == "drop-node" and node is not None:
        nodes.remove(node)
    elif fault == "drop-slice" and slice_ is not None:
        slices.remove(slice_)
    elif fault == "republish" and slice_ is not None:
        newer = copy.deepcopy(slice_)
        newer["spec"]["pool"]["generation"] = slice_["spec"]["pool"].get("generation", 0) + 1
        newer["spec"]["devices"] = newer["spec"]["devices"][: i % 3]
        slices.append(newer)
    elif fault == "device" and slice_ is not None and slice_["spec"].get("devices"):
        device = _pick(slice_["spec"]["devices"], i)
        field = _pick(["memory", "productName", "profile", "type", "name"], i)
        if field == "memory":
            device.setdefault("capacity", {})["memory"] = {
                "value": _pick(["1Gi", "81559Mi", "80G", "5e3", "40Gi"], i)
            }
        elif field == "name":
            device["name"] = value
        else:
            device["attributes"][field] = {"string": value}
    elif fault == "drop-memory" and slice_ is not None and slice_["spec"].get("devices"):
        _pick(slice_["spec"]["devices"], i).get("capacity", {}).pop("memory", None)
    elif fault == "driver" and slice_ is not None:
        slice_["spec"]["driver"] = value
    else:
        _claim_fault(cluster, fault, i, value)


def _claim_fault(cluster: Cluster, fault: str, i: int, value: str) -> None:
    """Claims moved, released or reserved for pods gone; claim holders terminating; logs that saw
    another GPU or none."""
    pods, claims, nodes = cluster.list("pods"), cluster.list("resourceclaims"), cluster.list("nodes")
    claim_, pod = _pick(claims, i), _pick(pods, i)
    holders = [p for p in pods if p["spec"].get("resourceClaims") or p["status"].get("resourceClaimStatuses")]
    if fault == "claim-node" and claim_ is not None and nodes:
        for result in claim_.get("status", {}).get("allocation", {}).get("devices", {}).get("results", []):
            result["pool"] = _pick(nodes, i + 1)["metadata"]["name"]
    elif fault == "release" and claim_ is not None:
        claim_.get("status", {}).pop("allocation", None)
    elif fault == "drop-claim" and claim_ is not None:
        claims.remove(claim_)
    elif fault == "reserve" and claim_ is not None and pod is not None:
        uid = pod["metadata"].get("uid") if value != "x" else "uid-gone"
        claim_.setdefault("status", {}).setdefault("reservedFor", []).append(
            {"resource": "pods", "name": pod["metadata"]["name"], "uid": uid}
        )
    elif fault == "terminating" and holders:
        _pick(holders, i)["metadata"]["deletionTimestamp"] = "2026-12-03T00:00:00Z"
    elif fault == "claim-status" and holders:
        holder = _pick(holders, i)
        for status in holder["status"].get("resourceClaimStatuses", []):
            status["resourceClaimName"] = value or None
    elif fault == "bridge-claim" and pod is not None:
        pod["status"]["extendedResourceClaimStatus"] = {"resourceClaimName": value or "gone"}
    elif fault == "second-attempt" and pod is not None:
        job_pods = [
            p
            for p in pods
            if "job-name" in p["metadata"]["labels"]
            or "batch.kubernetes.io/job-name" in p["metadata"]["labels"]
        ]
        if job_pods:
            attempt = copy.deepcopy(_pick(job_pods, i))
            attempt["metadata"]["name"] += "-retry"
            attempt["metadata"]["uid"] = attempt["metadata"].get("uid", "") + "-retry"
            attempt["status"]["phase"] = value
            original = _pick(job_pods, i)
            original["status"]["phase"] = "Pending"
            pods.insert(pods.index(original), attempt)
    elif fault == "claim-nodes" and claim_ is not None and nodes:
        allocation = claim_.setdefault("status", {}).setdefault("allocation", {})
        names = [_pick(nodes, i + k)["metadata"]["name"] for k in (3, 1)]
        term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": names}]}
        allocation["nodeSelector"] = {"nodeSelectorTerms": [term]}
    elif fault == "drop-uuid":
        for slice_ in cluster.list("resourceslices")[i % 2 :: 2]:
            for device in slice_["spec"].get("devices") or []:
                device.get("attributes", {}).pop("uuid", None)
    elif fault == "log" and cluster.logs:
        key = _pick(sorted(cluster.logs), i)
        if value == "x":
            del cluster.logs[key]
        else:
            cluster.logs[key] = _pick(
                [
                    "",
                    "GPU 0: x (UUID: GPU-other)\n",
                    "GPU 0: a (UUID: GPU-a)\nGPU 1: b (UUID: GPU-b)\n",
                    "no gpu\n",
                ],
                i,
            ) + cluster.logs[key] * (i % 2)
