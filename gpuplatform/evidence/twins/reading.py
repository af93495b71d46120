"""Reading a snapshot's objects as the gate programs read them, with the types the API serves.

The accessors return what jq would (null for a missing field, `[]` and `{}` for `// []`, `// {}`)
and raise `Unlike` on a value of a type the API never serves: the gate is then left to its jq
program. Also the pieces several programs share: the pools' nodes (`found`), `coverage`, `need`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["Lines", "Object", "Unlike", "found"]

Object = Mapping[str, Any]
Lines = list[str]


class Unlike(Exception):
    """The document holds a value of a type the API never serves: the jq program judges it."""


# --- reading fields as the API types them ------------------------------------------------------


def field(obj: Any, name: str) -> Any:
    """`.name` of an object or null (jq's null for a missing field); Unlike for anything else."""
    if obj is None:
        return None
    if type(obj) is not dict:
        raise Unlike(name)
    return obj.get(name)


def at(obj: Any, *path: str) -> Any:
    for name in path:
        obj = field(obj, name)
    return obj


def text(value: Any) -> str | None:
    if value is not None and type(value) is not str:
        raise Unlike(value)
    return value


def as_object(value: Any) -> dict[str, Any]:
    """An object, null read as `{}` (`// {}`)."""
    if value is None:
        return {}
    if type(value) is not dict:
        raise Unlike(value)
    return value


def items(value: Any) -> list[Any]:
    """A list, null read as `[]` (`// []`)."""
    if value is None:
        return []
    if type(value) is not list:
        raise Unlike(value)
    return value


def labels(obj: Any) -> dict[str, Any]:
    labels = as_object(at(obj, "metadata", "labels"))
    for value in labels.values():
        text(value)
    return labels


def name(obj: Any) -> str:
    name = text(at(obj, "metadata", "name"))
    if name is None:
        raise Unlike("metadata.name")
    return name


def nsname(obj: Any) -> str:
    namespace = text(at(obj, "metadata", "namespace"))
    return name(obj) if namespace is None else f"{namespace}/{name(obj)}"


def live(pod: Any) -> bool:
    return text(at(pod, "status", "phase")) not in ("Succeeded", "Failed")


def containers(pod: Any) -> list[Any]:
    """`pod_containers`: the init containers, then the app containers."""
    spec = field(pod, "spec")
    return items(field(spec, "initContainers")) + items(field(spec, "containers"))


def has_claims(pod: Any) -> bool:
    """`has_claims`: the pod asks for claims, or the scheduler made it one for an extended resource."""
    claims = items(at(pod, "spec", "resourceClaims"))
    return len(claims) > 0 or at(pod, "status", "extendedResourceClaimStatus") is not None


def statuses(pod: Any) -> list[dict[str, Any]]:
    return [as_object(s) for s in items(at(pod, "status", "containerStatuses"))]


def ready(pod: Any) -> bool:
    containers = statuses(pod)
    return len(containers) > 0 and all(s.get("ready") is True for s in containers)


def unready(pod: Any) -> str:
    return ",".join(text(s.get("name")) or "" for s in statuses(pod) if s.get("ready") is not True)


def by_node(objects: Iterable[Any]) -> dict[str, list[Any]]:
    """`by_node`: objects by `.spec.nodeName` (those without one left out), in their order."""
    out: dict[str, list[Any]] = {}
    for obj in objects:
        node = text(at(obj, "spec", "nodeName"))
        if node is not None:
            out.setdefault(node, []).append(obj)
    return out


def join(values: Iterable[str]) -> str:
    return ", ".join(values)


def or_else(value: str | None, alternative: str) -> str:
    """`value // alternative` for a string or null (jq's `//` keeps "", which Python's `or` does not)."""
    return alternative if value is None else value


# --- the pools' nodes and the coverage lines -------------------------------------------------------


def _holds(requirement: dict[str, Any], node_labels: dict[str, Any]) -> bool:
    """`holds($l)`: one `matchExpressions` item of a pool's selector on a node's labels."""
    key, op = str(requirement["key"]), str(requirement["operator"])
    values = [str(v) for v in requirement["values"]]
    if op == "In":
        return key in node_labels and node_labels[key] in values
    if op == "NotIn":
        return key not in node_labels or node_labels[key] not in values
    return (key in node_labels) == (op == "Exists")


def found(document: Object, data: Object) -> list[dict[str, Any]]:
    """`found($in)`: each pool of `$data.pools` with `found`, its nodes present in the cluster."""
    nodes = items(document["nodes"])
    present = {name(n) for n in nodes}
    pools = []
    for pool in data["pools"]:
        if pool["names"]:
            names = [name for name in pool["names"] if name in present]
        elif pool["labels"]:
            want = list(pool["labels"].items())
            exprs = pool.get("expressions") or []
            names = [
                name(n)
                for n in nodes
                if all(labels(n).get(key) == value for key, value in want)
                and all(_holds(e, labels(n)) for e in exprs)
            ]
        else:
            names = []
        pools.append(pool | {"found": names})
    return pools


def coverage(pools: Iterable[dict[str, Any]]) -> Lines:
    lines = []
    for pool in pools:
        if len(pool["found"]) >= pool["minNodes"]:
            continue
        if pool["names"]:
            present = set(pool["found"])
            absent = [name for name in pool["names"] if name not in present]
            lines.append(f"unknown: pool {pool['name']}: node(s) {join(absent)} not in the cluster")
        else:
            lines.append(
                f"unknown: pool {pool['name']} must have at least {pool['minNodes']} node(s) "
                f"({pool['describe']}); {len(pool['found'])} found"
            )
    return lines


def need(document: Object, kinds: tuple[str, ...]) -> Lines:
    missing = [kind for kind in kinds if document.get(kind) is None]
    return [f"unknown: {', '.join(missing)} could not be read"] if missing else []


def shown(value: str | None) -> str:
    """A value as jq's string interpolation shows it (null as `null`)."""
    return "null" if value is None else value


def dra_names(pools: Iterable[dict[str, Any]]) -> list[str]:
    return [name for pool in pools if pool["mode"] == "dra" for name in pool["found"]]


def results(claim: Any, data: Object) -> list[dict[str, Any]]:
    """The claim's allocation results of the driver."""
    results = [as_object(r) for r in items(at(claim, "status", "allocation", "devices", "results"))]
    return [r for r in results if r.get("driver") == data["driver"]]
