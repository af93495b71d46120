"""Twins of the programs that judge the validation pods (the claim pilot and the bridge) and the
early-bridge check."""

from __future__ import annotations

from typing import Any

from gpuplatform.evidence.twins import reading as r
from gpuplatform.labels import GPU_RESOURCE

__all__ = ["bridge", "claim_pilot", "early_bridge"]

# --- the validation pods: claim pilot and bridge ------------------------------------------------------


def _job_pods(document: r.Object, namespace: str, job: str) -> list[Any]:
    pods = []
    for pod in r.items(document["pods"]):
        labels = r.labels(pod)
        name = labels.get("batch.kubernetes.io/job-name")
        if (
            r.text(r.at(pod, "metadata", "namespace")) == namespace
            and (labels.get("job-name") if name is None else name) == job
        ):
            pods.append(pod)
    return pods


def _current(pods: list[Any]) -> Any:
    """`current`: the running pod, else a live one, else the first."""
    for pod in pods:
        if r.text(r.at(pod, "status", "phase")) == "Running":
            return pod
    return next((pod for pod in pods if r.live(pod)), pods[0])


def _uuids(log: str) -> list[str]:
    return [line.split("(UUID: ")[1].split(")")[0] for line in log.split("\n") if "(UUID: " in line]


def _gpu_lines(log: str) -> list[str]:
    return [line for line in log.split("\n") if line.startswith("GPU ") and ": " in line]


def _claim_result(document: r.Object, namespace: str, name: str, data: r.Object) -> dict[str, Any] | None:
    for claim in r.items(document["resourceclaims"]):
        if r.at(claim, "metadata", "namespace") == namespace and r.at(claim, "metadata", "name") == name:
            results = r.results(claim, data)
            return {"claim": claim, "result": results[0] if results else None}
    return None


def _device_uuid(document: r.Object, data: r.Object, pool: str | None, device: str | None) -> str | None:
    """`device_uuid`: the uuid the driver's slices of `pool` publish for `device`."""
    for s in r.items(document["resourceslices"]):
        if r.at(s, "spec", "driver") != data["driver"] or r.at(s, "spec", "pool", "name") != pool:
            continue
        for kind in r.items(r.at(s, "spec", "kinds")):
            for name, uuid in zip(kind["names"], kind["uuids"], strict=True):
                if name == device and uuid is not None:
                    return r.text(uuid)
    return None


def _log(document: r.Object, pod_name: str) -> str | None:
    return r.text(r.as_object(document.get("logs")).get(pod_name))


def claim_pilot(document: r.Object, data: r.Object, pools: list[dict[str, Any]]) -> r.Lines:
    """Twin of `gate_claim_pilot`."""
    need = r.need(document, ("nodes", "pods", "resourceclaims", "resourceslices"))
    if need:
        return need
    dra = r.dra_names(pools)
    v = data["validation"]
    pods = _job_pods(document, v["namespace"], v["job"])
    if not pods:
        return [f"unknown: no pod of the validation Job {v['namespace']}/{v['job']} yet"]
    pod = _current(pods)
    pn = r.nsname(pod)
    phase = r.text(r.at(pod, "status", "phase"))
    if phase != "Running":
        return [f"unknown: validation pod {pn} is {r.or_else(phase, 'Pending')}, not holding its claim"]
    statuses = [r.as_object(s) for s in r.items(r.at(pod, "status", "resourceClaimStatuses"))]
    mine = [s for s in statuses if s.get("name") == v["claim"]]
    cn = r.text(mine[0].get("resourceClaimName")) if mine else None
    if cn is None:
        return [f"unknown: validation pod {pn} has no generated claim yet"]
    cr = _claim_result(document, v["namespace"], cn, data)
    if cr is None:
        return [f"unknown: claim {v['namespace']}/{cn} of {pn} could not be read"]
    if cr["result"] is None:
        return [
            f"violation: claim {v['namespace']}/{cn} of running pod {pn} is not allocated by {data['driver']}"
        ]
    pool, device = r.text(cr["result"].get("pool")), r.text(cr["result"].get("device"))
    uuid = _device_uuid(document, data, pool, device)
    log = _log(document, pn)
    node = r.text(r.at(pod, "spec", "nodeName"))
    f = []
    if pool not in dra:
        f.append(
            f"violation: claim {v['namespace']}/{cn} is allocated on {r.shown(pool)}, not a DRA node of this wave"
        )
    if node != pool:
        f.append(f"violation: pod {pn} runs on {r.shown(node)}, its claim's device is on {r.shown(pool)}")
    if uuid is None:
        f.append(f"violation: device {r.shown(pool)}/{r.shown(device)} has no uuid in its ResourceSlice")
    if log is None:
        f.append(f"unknown: the log of {pn} was not read")
    elif not _uuids(log):
        f.append(f"unknown: {pn} has printed no nvidia-smi -L line yet")
    elif uuid is not None and uuid not in _uuids(log):
        f.append(
            f"violation: the container of {pn} saw {r.join(_uuids(log))}; its claim holds "
            f"{r.shown(pool)}/{r.shown(device)} with uuid {uuid}"
        )
    if f:
        return f
    return [
        f"proof: claim {v['namespace']}/{cn} holds {r.shown(pool)}/{r.shown(device)} (uuid {uuid}), "
        f"seen by the container of {pn} on {r.shown(node)}",
        f"act: release {v['namespace']} {r.name(pod)} {cn}",
    ]


def bridge(document: r.Object, data: r.Object, pools: list[dict[str, Any]]) -> r.Lines:
    """Twin of `gate_bridge`."""
    need = r.need(document, ("nodes", "pods", "resourceclaims", "resourceslices"))
    if need:
        return need
    dra = r.dra_names(pools)
    legacy = [name for pool in pools if pool["mode"] == "legacy" for name in pool["found"]]
    b = data["bridge"]
    lines = []
    for side in b["sides"]:
        pods = _job_pods(document, b["namespace"], side["job"])
        if not pods:
            lines.append(f"unknown: no pod of the bridge Job {b['namespace']}/{side['job']} yet")
            continue
        lines += _bridge_side(document, data, b["namespace"], side, _current(pods), dra, legacy)
    if any(line.startswith(("violation: ", "unknown: ")) for line in lines):
        return [line for line in lines if not line.startswith("act: ")]
    return lines


def _bridge_side(
    document: r.Object,
    data: r.Object,
    namespace: str,
    side: r.Object,
    pod: Any,
    dra: list[str],
    legacy: list[str],
) -> r.Lines:
    pn = r.nsname(pod)
    node = r.text(r.at(pod, "spec", "nodeName")) or ""
    cn = r.text(r.at(pod, "status", "extendedResourceClaimStatus", "resourceClaimName"))
    log = _log(document, pn)
    phase = r.text(r.at(pod, "status", "phase"))
    if phase != "Running":
        return [f"unknown: bridge pod {pn} is {r.or_else(phase, 'Pending')}"]
    if log is None:
        return [f"unknown: the log of {pn} was not read"]
    gpus = len(_gpu_lines(log))
    if gpus == 0:
        return [f"unknown: {pn} has printed no nvidia-smi -L line yet"]
    f = []
    if gpus != 1:
        f.append(f"violation: {pn} requested one nvidia.com/gpu and saw {gpus} GPUs")
    if side["side"] == "dra":
        if node not in dra:
            f.append(f"violation: {pn} runs on {node}, not a DRA node of this wave")
        if cn is None:
            f.append(
                f"violation: {pn} on DRA node {node} got no claim from the bridge class "
                "(pod.status.extendedResourceClaimStatus is empty)"
            )
        else:
            cr = _claim_result(document, namespace, cn, data)
            if cr is None or cr["result"] is None:
                f.append(
                    f"violation: bridge claim {namespace}/{cn} of {pn} is not allocated by {data['driver']}"
                )
            else:
                result = cr["result"]
                uuid = _device_uuid(document, data, r.text(result.get("pool")), r.text(result.get("device")))
                if uuid not in _uuids(log):
                    f.append(
                        f"violation: {pn} saw {r.join(_uuids(log))}; its bridge claim holds uuid {r.shown(uuid)}"
                    )
    else:
        if node not in legacy:
            f.append(f"violation: {pn} runs on {node}, not a legacy node of this wave")
        if cn is not None:
            f.append(
                f"violation: {pn} on legacy node {node} was served by the DRA bridge (claim {cn}), not the device plugin"
            )
    if f:
        return f
    served = ", served by the device plugin" if cn is None else f" through bridge claim {namespace}/{cn}"
    return [
        f"proof: {side['side']} side: {pn} on {node} saw exactly one GPU ({r.join(_uuids(log))}){served}",
        f"act: release {namespace} {r.name(pod)} {r.or_else(cn, '-')}",
    ]


# --- early bridge ---------------------------------------------------------------------------------

_EARLY = "before a compatibility-bridge wave enables a bridge"


def _requests_gpu(pod: Any) -> bool:
    """Any container's limits or requests name `nvidia.com/gpu` (stops at the first, as jq's `any`)."""
    for container in r.containers(pod):
        for part in ("limits", "requests"):
            if GPU_RESOURCE in r.as_object(r.at(container, "resources", part)):
                return True
    return False


def early_bridge(document: r.Object, data: r.Object, pools: list[dict[str, Any]]) -> r.Lines:
    """Twin of `gate_early_bridge`."""
    if data["bridgeAllowed"]:
        return [
            "proof: this wave is at or after compatibility-bridge and enables a bridge: "
            f"a bridge may serve {GPU_RESOURCE}"
        ]
    need = r.need(document, ("pods", "deviceclasses"))
    if need:
        return need
    v = [
        f"violation: DeviceClass {r.shown(r.text(r.at(c, 'metadata', 'name')))} serves {GPU_RESOURCE} "
        f"(spec.extendedResourceName) {_EARLY}"
        for c in r.items(document["deviceclasses"])
        if r.at(c, "spec", "extendedResourceName") == GPU_RESOURCE
    ]
    for pod in r.items(document["pods"]):
        if not r.live(pod):
            continue
        claim = r.text(r.at(pod, "status", "extendedResourceClaimStatus", "resourceClaimName"))
        if claim is None or not _requests_gpu(pod):
            continue
        node = r.or_else(r.text(r.at(pod, "spec", "nodeName")), "<none>")
        v.append(
            f"violation: pod {r.nsname(pod)} on node {node} holds {GPU_RESOURCE} through bridge claim {claim} {_EARLY}"
        )
    if v:
        return v
    return [f"proof: no DeviceClass serves {GPU_RESOURCE} and no pod holds it through a bridge claim"]
