"""Twin of the program that judges a drain wave: the pools it empties hold no GPU pod."""

from __future__ import annotations

from typing import Any

from gpuplatform.evidence.twins import reading as r
from gpuplatform.labels import NVIDIA_RESOURCE_PREFIX

__all__ = ["drained", "held_resources"]


def held_resources(pod: Any) -> list[str]:
    """`held_resources`: the `nvidia.com/*` resources any container (init containers included) asks
    for or limits to a count other than "0", sorted and each once."""
    held: set[str] = set()
    for container in r.containers(pod):
        for part in ("limits", "requests"):
            for key, value in r.as_object(r.at(container, "resources", part)).items():
                if type(value) is not str:
                    raise r.Unlike(value)  # jq's tostring of a number is not always the API's text
                if key.startswith(NVIDIA_RESOURCE_PREFIX) and value != "0":
                    held.add(key)
    return sorted(held)


def drained(document: r.Object, data: r.Object, pools: list[dict[str, Any]]) -> r.Lines:
    """Twin of `gate_drained`."""
    need = r.need(document, ("nodes", "pods"))
    if need:
        return need
    draining = set(data["drains"])
    fp = [p for p in pools if p["name"] in draining]
    pods_on = r.by_node(p for p in r.items(document["pods"]) if r.live(p))
    lines = r.coverage(fp)
    for pool in fp:
        v = []
        for node in pool["found"]:
            for pod in pods_on.get(node, []):
                held = held_resources(pod) + (["a resource claim"] if r.has_claims(pod) else [])
                if held:
                    v.append(
                        f"violation: pod {r.nsname(pod)} on node {node} of pool {pool['name']}, which this wave "
                        f"drains, holds {r.join(held)}"
                    )
        lines += v or [
            f"proof: pool {pool['name']}: no live pod on its {len(pool['found'])} node(s) holds an "
            f"{NVIDIA_RESOURCE_PREFIX}* resource or a resource claim"
        ]
    return lines
