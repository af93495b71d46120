"""Helpers for tests of your own platforms, the ones the project's own tests use (like cdk8s'
`Testing`): a platform's rendered tree as objects and the assertion that it is valid; the model's
cluster of any wave as a snapshot, faults to inject into it, and its gates judged on it. No test
framework is imported: the helpers raise `AssertionError`, which pytest and unittest both report.
"""

from __future__ import annotations

from gpuplatform.testing.cluster import (
    OPERATOR_NAMESPACE,
    Cluster,
    claim,
    device_plugin_pod,
    judge_wave,
    kubelet_plugin_pod,
    node,
    pod,
    ready,
    wave_cluster,
)
from gpuplatform.testing.faults import FAULTS, VALUES, inject_fault
from gpuplatform.testing.tree import Tree, assert_valid_tree, tree_objects

__all__ = [
    "FAULTS",
    "OPERATOR_NAMESPACE",
    "VALUES",
    "Cluster",
    "Tree",
    "assert_valid_tree",
    "claim",
    "device_plugin_pod",
    "inject_fault",
    "judge_wave",
    "kubelet_plugin_pod",
    "node",
    "pod",
    "ready",
    "tree_objects",
    "wave_cluster",
]
