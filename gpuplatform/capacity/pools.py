"""Resource pools visible from one node: `GatherPools` of the stable allocator.

Source: k8s.io/dynamic-resource-allocation structured/internal/stable/pools_stable.go
(kubernetes-1.36.1). A pool is incomplete when fewer slices than `resourceSliceCount` of its
newest generation exist, invalid when a device name repeats; slices of an older generation are
ignored. Upstream iterates pools in Go map order (random); pools are sorted by (driver, pool)
here, which changes which devices are picked but never whether a claim fits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpuplatform.kube.nodes import Node, node_selector_matches

__all__ = ["Pool", "gather_pools", "slice_matches_node"]


@dataclass
class Pool:
    """Slices of one (driver, pool) that a node can use."""

    driver: str
    name: str
    slices: list[Mapping[str, Any]] = field(default_factory=list)
    incomplete: bool = False
    invalid: str = ""

    @property
    def id(self) -> str:
        return f"{self.driver}/{self.name}"


def slice_matches_node(spec: Mapping[str, Any], node: Node) -> bool | None:
    """Whether a slice's node selection admits `node`; None when the slice uses no known field."""
    if spec.get("nodeName"):
        return bool(spec["nodeName"] == node.name)
    if spec.get("allNodes"):
        return True
    if spec.get("nodeSelector") is not None:
        return node_selector_matches(spec["nodeSelector"], node)
    return None


def _generation(spec: Mapping[str, Any]) -> int:
    return int((spec.get("pool") or {}).get("generation", 0))


def _all_of_generation(
    slices: Sequence[Mapping[str, Any]], key: tuple[str, str], generation: int
) -> list[Mapping[str, Any]] | None:
    """`checkSlicesInPool`: every slice of the pool at `generation`; None when a newer one exists."""
    out = []
    for item in slices:
        spec = item["spec"]
        if (spec["driver"], spec["pool"]["name"]) != key:
            continue
        if _generation(spec) > generation:
            return None
        if _generation(spec) == generation:
            out.append(item)
    return out


def _duplicate_name(slices: Sequence[Mapping[str, Any]]) -> str | None:
    seen: set[str] = set()
    for item in slices:
        for device in item["spec"].get("devices") or ():
            if device.get("name") in seen:
                return str(device.get("name"))
            seen.add(str(device.get("name")))
    return None


def gather_pools(slices: Sequence[Mapping[str, Any]], node: Node) -> list[Pool]:
    """The pools with devices for `node` (slices with counters or per-device selection are skipped:
    partitionable devices are not modelled)."""
    found: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for item in slices:
        spec = item["spec"]
        if spec.get("perDeviceNodeSelection") is not None or spec.get("sharedCounters"):
            continue
        if not slice_matches_node(spec, node):
            continue
        key = (spec["driver"], spec["pool"]["name"])
        current = found.get(key)
        if current is None or _generation(spec) > _generation(current[0]["spec"]):
            found[key] = [item]
        elif _generation(spec) == _generation(current[0]["spec"]):
            current.append(item)
    pools = []
    for key in sorted(found):
        members = found[key]
        spec = members[0]["spec"]
        wanted = int(spec["pool"].get("resourceSliceCount", 1))
        if len(members) != wanted:
            everything = _all_of_generation(slices, key, _generation(spec))
            if everything is None:
                continue
            if len(everything) != wanted:
                pools.append(Pool(key[0], key[1], incomplete=True))
                continue
        duplicate = _duplicate_name(members)
        if duplicate is not None:
            pools.append(Pool(key[0], key[1], invalid=f"duplicate device name {duplicate}"))
            continue
        pools.append(Pool(key[0], key[1], members))
    return pools
