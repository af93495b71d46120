"""The fields of Nodes and Pods the gate programs read: offline, a snapshot keeps only these.

A running pod as `kubectl get -o json` prints it is ~3 KiB (containers, volumes, tolerations,
conditions) and a GPU node runs half a dozen (the device plugin or the DRA kubelet plugin, the
GPU Operator's operands); a Node is larger still (images, conditions, node info). The programs read
a few fields of each, so before jq parses a snapshot `project` keeps those: at 2,000 nodes jq's
input shrinks from ~70 MB to a few. The gate Job reads what kubectl read, whole.

`READS` names the fields per kind as a tree: a name maps to True (the whole value), to a tree (an
object: only those fields), or to a one-element list holding a tree (a list of objects: those
fields of each). Where a value does not have the shape the tree expects (a string where an object
is read), it is kept as it is, so that jq meets exactly what it would meet in the whole object.
Tests hold that every gate says the same on a projected snapshot as on the whole one.
"""

from __future__ import annotations

from typing import Any, Literal

__all__ = ["READS", "project"]

Reads = dict[str, "Literal[True] | Reads | list[Reads]"]

READS: dict[str, Reads] = {
    "nodes": {"metadata": {"name": True, "labels": True}, "status": {"allocatable": True}},
    "pods": {
        "metadata": {
            "name": True,
            "namespace": True,
            "uid": True,
            "labels": True,
            "deletionTimestamp": True,
            "ownerReferences": [{"kind": True, "name": True, "controller": True, "uid": True}],
        },
        "spec": {
            "nodeName": True,
            "resourceClaims": True,
            "containers": [{"image": True}],
            "volumes": [{"hostPath": True}],
        },
        "status": {
            "phase": True,
            "containerStatuses": [{"name": True, "ready": True}],
            "resourceClaimStatuses": True,
            "extendedResourceClaimStatus": True,
        },
    },
}


def _kept(value: Any, reads: Literal[True] | Reads | list[Reads]) -> Any:
    if reads is True:
        return value
    if isinstance(reads, list):
        if type(value) is not list:
            return value
        return [_kept(item, reads[0]) for item in value]
    if type(value) is not dict:
        return value
    return {name: _kept(value[name], inner) for name, inner in reads.items() if name in value}


def project(kind: str, items: list[Any]) -> list[Any]:
    """`items` of `kind` with only the fields the programs read (all of them for another kind)."""
    reads = READS.get(kind)
    if reads is None:
        return items
    return [_kept(item, reads) for item in items]
