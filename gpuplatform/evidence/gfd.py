"""What GPU Feature Discovery and the MIG manager say about a node's GPUs, read from its labels.

Sources (NVIDIA/k8s-device-plugin `internal/lm/resource.go`, commit 02f65cc): a full-GPU resource is
labelled `<resource>.count` and `<resource>.product` (the device name, spaces as `-`, `-SHARED` on a
time-sliced GPU that is not renamed), a labeler with count 0 labels nothing; a MIG resource
`nvidia.com/mig-<profile>` (mixed strategy) is labelled `nvidia.com/mig-<profile>.count` and
`.product` `<parent name>-MIG-<profile>`, and under the single strategy the MIG devices are the
`nvidia.com/gpu` resource, so `nvidia.com/gpu.count` counts MIG devices and `nvidia.com/gpu.product`
ends in `-MIG-<profile>`. GFD labels the strategy `nvidia.com/mig.strategy`; the MIG manager reads the
layout a node should have from `nvidia.com/mig.config` (GPU Operator v26.3.1 ClusterPolicy
`migManager.config`, the CRD's "node label nvidia.com/mig.config").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpuplatform.labels import (
    GPU_COUNT_LABEL,
    GPU_PRODUCT_LABEL,
    GPU_RESOURCE,
    MIG_CONFIG_LABEL,
    MIG_STRATEGY_LABEL,
)

__all__ = [
    "NodeGpus",
    "read_node",
]

_MIG_LABEL = re.compile(r"^nvidia\.com/mig-(?P<profile>[^/]+)\.(?P<what>count|product)$")
_MIG_SUFFIX = "-MIG-"


@dataclass(frozen=True)
class NodeGpus:
    """A node's GPUs as its labels say: product, physical GPUs, MIG devices and configuration."""

    product: str
    """The physical GPU's product label (`-MIG-<profile>` removed); empty when no label names one."""
    gpus: int | None
    """Physical GPUs; None when the labels do not say (MIG devices hide the GPUs they are cut from)."""
    mig_devices: tuple[tuple[str, int], ...] = ()
    """(MIG profile, devices of that profile on the node), profiles sorted."""
    mig_config: str = ""
    mig_strategy: str = ""
    guessed: tuple[str, ...] = ()
    """What the count comes from when it is not GFD's full-GPU count."""

    def mig_layout(self) -> tuple[str, ...] | None:
        """The MIG profiles of one GPU (each GPU alike), when the counts divide evenly by the GPUs."""
        if not self.mig_devices or not self.gpus:
            return None
        if any(n % self.gpus for _, n in self.mig_devices):
            return None
        return tuple(p for p, n in self.mig_devices for _ in range(n // self.gpus))

    def mig_summary(self) -> str:
        """`2x3g.20gb` style, profiles sorted; empty without MIG devices."""
        return ", ".join(f"{n}x{p}" for p, n in self.mig_devices)


def _count(value: Any) -> int | None:
    text = str(value) if value is not None else ""
    return int(text) if text.isascii() and text.isdigit() else None


def read_node(labels: Mapping[str, Any], allocatable: Mapping[str, Any]) -> NodeGpus:
    """The node's GPUs from its GFD and MIG manager labels (allocatable `nvidia.com/gpu` as a fallback)."""
    product = str(labels.get(GPU_PRODUCT_LABEL) or "")
    count = _count(labels.get(GPU_COUNT_LABEL))
    strategy = str(labels.get(MIG_STRATEGY_LABEL) or "")
    mig: dict[str, int] = {}
    mig_product = ""
    for key, value in labels.items():
        found = _MIG_LABEL.match(str(key))
        if found is None:
            continue
        if found["what"] == "count" and (n := _count(value)):
            mig[found["profile"]] = mig.get(found["profile"], 0) + n
        elif found["what"] == "product":
            mig_product = str(value)
    guessed: list[str] = []
    full = count
    if _MIG_SUFFIX in product:  # single strategy: nvidia.com/gpu is the MIG devices
        product, _, profile = product.partition(_MIG_SUFFIX)
        if count:
            mig[profile] = mig.get(profile, 0) + count
        full = 0
    if not product and mig_product:
        product = mig_product.partition(_MIG_SUFFIX)[0]
    product = product.removesuffix("-SHARED")
    if full is None and not mig:
        full = _count(allocatable.get(GPU_RESOURCE))
        if full:
            guessed.append(f"allocatable nvidia.com/gpu={full} (no {GPU_COUNT_LABEL} label)")
    gpus: int | None = full or None
    if mig:
        gpus = None
        guessed.append(
            f"GFD counts MIG devices ({', '.join(f'{n}x{p}' for p, n in sorted(mig.items()))}), "
            "not the GPUs they are cut from"
        )
    return NodeGpus(
        product,
        gpus,
        tuple(sorted(mig.items())),
        str(labels.get(MIG_CONFIG_LABEL) or ""),
        strategy,
        tuple(guessed),
    )
