"""Will it fit? A Kubernetes-faithful DRA allocator and the capacity of every wave."""

from __future__ import annotations

from gpuplatform.capacity.allocator import AllocationError, Allocator, DeviceID, Features, NodeAllocationError
from gpuplatform.capacity.claims import Claim, DeviceClass, parse_claim, parse_class
from gpuplatform.kube.nodes import Node

__all__ = [
    "AllocationError",
    "Allocator",
    "Claim",
    "DeviceClass",
    "DeviceID",
    "Features",
    "Node",
    "NodeAllocationError",
    "parse_claim",
    "parse_class",
]
