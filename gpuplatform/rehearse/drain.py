"""The drain a provisioner does before it removes a node (Karpenter's terminator, a cloud's node
pool resize or delete): the node's pods are evicted, or deleted, until none is left but DaemonSet
pods, which go with the node."""

from __future__ import annotations

from gpuplatform.rehearse.client import Client, Obj

__all__ = ["drain_step"]


def _daemon_pod(pod: Obj) -> bool:
    return any(o.get("kind") == "DaemonSet" for o in pod["metadata"].get("ownerReferences") or [])


def drain_step(client: Client, node: str, *, evict: bool = True) -> tuple[bool, bool]:
    """One pass over `node`'s pods: each one still running is evicted (a PodDisruptionBudget's
    refusal is retried on the next pass) or, with `evict` false, deleted. (empty, wrote): whether
    no pod is left, and whether anything was asked of the API."""
    left = [
        p
        for p in client.list("Pod")
        if p["spec"].get("nodeName") == node
        and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        and not _daemon_pod(p)
    ]
    wrote = False
    for pod in left:
        meta = pod["metadata"]
        if meta.get("deletionTimestamp"):
            continue
        if evict:
            wrote |= client.evict(meta["name"], meta["namespace"])
        else:
            wrote |= client.delete("Pod", meta["name"], meta["namespace"])
    return not left, wrote
