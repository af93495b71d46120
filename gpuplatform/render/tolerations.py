"""Taints the spec puts on GPU nodes, and the tolerations a GPU DaemonSet needs for them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gpuplatform.model.platform import Platform
from gpuplatform.render.nodes import pool_taint

__all__ = ["gpu_node_taints", "tolerates", "tolerations_for"]


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, str]) -> bool:
    """Whether `toleration` tolerates `taint`, as the scheduler and kubelet decide.

    k8s.io/api core/v1 toleration.go `ToleratesTaint`: an empty effect matches every effect, an
    empty key (operator Exists) every key; Exists ignores the value, Equal (the default) needs it.
    """
    if toleration.get("effect") not in (None, "", taint["effect"]):
        return False
    if toleration.get("key") not in (None, "", taint["key"]):
        return False
    if toleration.get("operator") == "Exists":
        return True
    if not toleration.get("key"):
        return False
    return bool(
        toleration.get("operator", "Equal") == "Equal"
        and toleration.get("value", "") == taint.get("value", "")
    )


def gpu_node_taints(platform: Platform) -> list[dict[str, str]]:
    """Every taint the spec puts on GPU nodes (each pool's DRA taint), distinct, in a fixed order.

    Every wave tolerates all of them, so operand pod templates do not change when a pool moves.
    """
    taints = {tuple(sorted(pool_taint(platform, p).items())) for p in platform.node_pools}
    return sorted((dict(t) for t in taints), key=lambda t: (t["key"], t.get("value", ""), t["effect"]))


def tolerations_for(base: Sequence[Mapping[str, Any]], taints: Sequence[Mapping[str, str]]) -> list[Any]:
    """`base`, plus a toleration for each taint that no toleration of `base` tolerates yet."""
    out: list[Any] = [dict(t) for t in base]
    for taint in taints:
        if not any(isinstance(t, Mapping) and tolerates(t, taint) for t in out):
            item = {
                "key": taint["key"],
                "operator": "Equal",
                "value": taint.get("value", ""),
                "effect": taint["effect"],
            }
            out.append(item if item["value"] else {k: v for k, v in item.items() if k != "value"})
    return out
