"""The invariants a rehearsal reads from the real API state after every step.

- `one-allocator`: no node where the device plugin advertises GPUs (`nvidia.com/*` allocatable
  above 0) while the DRA driver's ResourceSlices are published or not yet wiped, now or at any
  moment the node agents saw since the last step; no running pod
  holding device-plugin GPUs on a node with such slices; no pod outside the GPU stack's namespaces
  that reaches GPUs through NVIDIA_VISIBLE_DEVICES without a request or a claim (a third allocator).
- `claim-stranded`: no allocated claim on a node where no DRA kubelet plugin runs.
- `workload-disrupted`: every declared workload has its replicas running, unless the transition
  moves it (its pool changes allocator, it converts, its tenant arrives or leaves).
- `stuck-terminating`: no pod the kubelet cannot finish (its claim cannot be unprepared).

The same names and meanings as `simulate/invariants.py`, so the differential test compares verdicts.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gpuplatform.gates.matchers import DRA_DRIVER, VISIBLE_DEVICES, shows_gpus
from gpuplatform.rehearse.client import Obj
from gpuplatform.rehearse.cluster import Rehearsal
from gpuplatform.rehearse.workloads import Declared

__all__ = ["Finding", "check_state", "workload_name"]


@dataclass(frozen=True)
class Finding:
    """A broken invariant: which, what, the objects."""

    invariant: str
    message: str
    objects: tuple[str, ...] = ()


def _advertised(node: Obj) -> dict[str, str]:
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    return {
        k: str(v) for k, v in allocatable.items() if k.startswith("nvidia.com/") and str(v) not in ("0", "")
    }


def _live(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


def _holds_device_plugin_gpus(pod: Obj) -> bool:
    if (pod.get("status") or {}).get("extendedResourceClaimStatus"):
        return False
    for container in (pod["spec"].get("initContainers") or []) + (pod["spec"].get("containers") or []):
        for source in (
            (container.get("resources") or {}).get("limits") or {},
            (container.get("resources") or {}).get("requests") or {},
        ):
            if any(k.startswith("nvidia.com/") and str(v) != "0" for k, v in source.items()):
                return True
    return False


def _third_allocator(pod: Obj) -> bool:
    if pod["spec"].get("resourceClaims") or _holds_device_plugin_gpus(pod):
        return False
    return any(
        e.get("name") == VISIBLE_DEVICES and shows_gpus(str(e.get("value", "")))
        for c in pod["spec"].get("containers") or []
        for e in c.get("env") or []
    )


def check_state(cluster: Rehearsal, declared: Iterable[Declared], moving: set[str]) -> list[Finding]:
    """Every invariant on the cluster now. `moving`: `namespace/name` of declared workloads the
    transition moves (exempt from `workload-disrupted`)."""
    client = cluster.client
    fleet = cluster.agents.fleet
    nodes = {n["metadata"]["name"]: n for n in client.list("Node")}
    pods = client.list("Pod")
    slices = [s for s in client.list("ResourceSlice") if s["spec"].get("driver") == DRA_DRIVER]
    published = {str(s["spec"].get("nodeName")) for s in slices}
    findings: list[Finding] = []
    stack_namespaces = {cluster.stack.operator_namespace, cluster.stack.driver_namespace}
    for name, seen in sorted(cluster.agents.overlaps.items()):
        findings.append(Finding("one-allocator", seen, (f"Node/{name}",)))
    for name, node in sorted(nodes.items()):
        if name not in fleet or name in cluster.agents.overlaps:
            continue
        advertised = _advertised(node)
        if advertised and name in published:
            findings.append(
                Finding(
                    "one-allocator",
                    f"node {name}: the device plugin advertises {', '.join(f'{k}={v}' for k, v in sorted(advertised.items()))} "
                    f"while {DRA_DRIVER} publishes its devices",
                    (f"Node/{name}",),
                )
            )
    for pod in pods:
        meta = pod["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        where = str(pod["spec"].get("nodeName") or "")
        if not where or not _live(pod) or (pod.get("status") or {}).get("phase") != "Running":
            continue
        if where in published and _holds_device_plugin_gpus(pod):
            findings.append(
                Finding(
                    "one-allocator",
                    f"pod {key} holds device-plugin GPUs on {where}, whose devices {DRA_DRIVER} publishes",
                    (f"Pod/{key}",),
                )
            )
        if meta["namespace"] not in stack_namespaces and _third_allocator(pod):
            findings.append(
                Finding(
                    "one-allocator",
                    f"pod {key} reaches the GPUs of {where} through {VISIBLE_DEVICES} with no allocator",
                    (f"Pod/{key}",),
                )
            )
    plugin_nodes = {
        str(p["spec"].get("nodeName"))
        for p in pods
        if cluster.agents.kubelet_plugin_pod(p)
        and (p.get("status") or {}).get("phase") == "Running"
        and not p["metadata"].get("deletionTimestamp")
    }
    for claim in client.list("ResourceClaim"):
        results = ((claim.get("status") or {}).get("allocation") or {}).get("devices", {}).get(
            "results"
        ) or []
        for result in results:
            pool = str(result.get("pool"))
            if result.get("driver") == DRA_DRIVER and pool in fleet and pool not in plugin_nodes:
                meta = claim["metadata"]
                findings.append(
                    Finding(
                        "claim-stranded",
                        f"claim {meta['namespace']}/{meta['name']} is allocated on {pool}, where no DRA kubelet plugin runs",
                        (f"ResourceClaim/{meta['namespace']}/{meta['name']}",),
                    )
                )
    for key, why in sorted(cluster.agents.stuck.items()):
        findings.append(Finding("claim-stranded", f"pod {key} hangs in Terminating: {why}", (f"Pod/{key}",)))
    findings += _availability(cluster, pods, declared, moving)
    return findings


def _availability(
    cluster: Rehearsal, pods: list[Obj], declared: Iterable[Declared], moving: set[str]
) -> list[Finding]:
    out = []
    for workload in declared:
        key = f"{workload.namespace}/{workload.name}"
        if key in moving or workload.replicas == 0:
            continue
        running = [
            p for p in pods
            if p["metadata"]["namespace"] == workload.namespace
            and workload_name(p) == workload.name
            and (p.get("status") or {}).get("phase") == "Running"
            and not p["metadata"].get("deletionTimestamp")
        ]  # fmt: skip
        if len(running) < workload.replicas:
            waiting = [
                p for p in pods
                if p["metadata"]["namespace"] == workload.namespace
                and workload_name(p) == workload.name
                and (p.get("status") or {}).get("phase") == "Pending"
            ]  # fmt: skip
            why = _pending_reason(waiting[0]) if waiting else "no pod"
            out.append(
                Finding(
                    "workload-disrupted",
                    f"{workload.kind} {key} runs {len(running)} of {workload.replicas} pod(s) outside its move ({why})",
                    (f"{workload.kind}/{key}",),
                )
            )
    return out


def workload_name(pod: Obj) -> str:
    """The name of the workload that runs `pod`, by its controller: a ReplicaSet's Deployment (the
    name before its `pod-template-hash`), a Job, a StatefulSet, a DaemonSet; a bare pod's `app` label.
    A NIMService's pods are its Deployment's, named after it."""
    meta = pod["metadata"]
    labels = meta.get("labels") or {}
    owner = next((o for o in meta.get("ownerReferences") or [] if o.get("controller")), None)
    if owner is None:
        return str(labels.get("app", ""))
    name = str(owner["name"])
    if owner["kind"] == "ReplicaSet" and (template := labels.get("pod-template-hash")):
        return name.removesuffix(f"-{template}")
    return name


def _pending_reason(pod: Obj) -> str:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return f"Pending: {condition.get('message', condition.get('reason', ''))}"
    return "Pending"
