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

`projector` projects a kind's items batch by batch as a snapshot is read (`evidence`), and holds
equal projected values once: a million pods carry a few namespaces, label sets, owners and statuses,
and as separate dicts they took ~2.2 KiB a pod where the file holds ~0.6 KiB. Nothing that reads a
document changes it, so sharing is invisible to the programs and their twins.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import orjson

__all__ = ["READS", "project", "projector"]

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
            "ownerReferences": [
                {"apiVersion": True, "kind": True, "name": True, "controller": True, "uid": True}
            ],
        },
        "spec": {
            "nodeName": True,
            "resourceClaims": True,
            "initContainers": [
                {"env": [{"name": True, "value": True}], "resources": {"limits": True, "requests": True}}
            ],
            "containers": [
                {
                    "image": True,
                    "args": True,
                    "command": True,
                    "env": [{"name": True, "value": True}],
                    "resources": {"limits": True, "requests": True},
                }
            ],
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


#: A place stops sharing when fewer than half of its last `_WINDOW` values were met before
#: (names, uids: every pod's own).
_WINDOW = 4096

Keep = Callable[[Any], Any]


def _shared() -> Keep:
    """A function returning the value equal to its argument it met first at one place of a
    projection, while that pays (see `_WINDOW`); a closure, which Python calls faster than an object.

    For what a parser returned (JSON or YAML): strings are shared by value, objects and lists by
    their JSON text, which tells `1` from `1.0` and `true` and keeps key order; a text holding
    `null` is not shared (NaN and infinities are written `null` too), nor are other values.
    """
    held: dict[str | bytes, Any] | None = {}
    seen = hits = 0

    def share(value: Any) -> Any:
        nonlocal held, seen, hits
        if held is None:
            return value
        kind = type(value)
        key: str | bytes
        if kind is str:
            key = value
        elif kind is dict or kind is list:
            try:
                key = orjson.dumps(value, option=orjson.OPT_PASSTHROUGH_SUBCLASS)
            except orjson.JSONEncodeError:
                return value
            if b"null" in key:
                return value
        else:
            return value
        shared = held.setdefault(key, value)
        seen += 1
        hits += shared is not value
        if seen == _WINDOW:
            if hits * 2 < seen:
                held = None
            seen = hits = 0
        return shared

    return share


def _compiled(reads: Literal[True] | Reads | list[Reads], share: bool, top: bool = False) -> Keep | None:
    """A function keeping `reads` of a value (None: the whole value). With `share`, what it returns
    is held once (`_shared`), except at the `top` (an item is its own) and in a list's items (held
    with their list). An object is built by a plain loop: a comprehension is one more frame."""
    held = _shared() if share and not top else None
    if reads is True:
        return held
    if isinstance(reads, list):
        each = _compiled(reads[0], share=False)

        def kept_list(value: Any) -> Any:
            if type(value) is not list:
                return value
            out = value[:] if each is None else [each(item) for item in value]
            return out if held is None else held(out)

        return kept_list
    fields = [(name, _compiled(inner, share)) for name, inner in reads.items()]

    def kept_object(value: Any) -> Any:
        if type(value) is not dict:
            return value
        out = {}
        for name, keep in fields:
            if name in value:
                out[name] = value[name] if keep is None else keep(value[name])
        return out if held is None else held(out)

    return kept_object


def project(kind: str, items: list[Any]) -> list[Any]:
    """`items` of `kind` with only the fields the programs read (all of them for another kind)."""
    reads = READS.get(kind)
    if reads is None:
        return items
    keep = _compiled(reads, share=False)
    assert keep is not None
    return [keep(item) for item in items]


def projector(kind: str) -> Callable[[list[Any]], list[Any]] | None:
    """For a kind the programs read in part, a function projecting each batch of its items as a
    snapshot is read, equal values held once across batches; None for another kind."""
    reads = READS.get(kind)
    if reads is None:
        return None
    keep = _compiled(reads, share=True, top=True)
    assert keep is not None
    return lambda items: [keep(item) for item in items]
