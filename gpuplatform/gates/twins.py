"""Python twins of the gate programs that judge every node: offline, they judge instead of jq.

`allocator-exclusivity`, `inventory` and `operands` say a line or more per node and read every pod
of a node: at 2,000 nodes of a GPU Operator cluster (~12,000 pods) jq, at about 3 µs a step, spends
~2 s on them, Python ~0.1 s. Each twin says exactly the lines its jq program (`gates/programs.py`)
says, in the same order, for the document the program reads offline (Nodes and Pods projected,
ResourceSlices summed up by kind) and the same `$data`; the gate Job keeps running the program.

A twin reads the fields with the types the API serves them in. Anything else (a label that is not a
string, a container status that is not an object, a quantity jq would not read as a number) raises
`Unlike`, and the evaluator runs the jq program for that gate instead: the twins need to match jq
only where the API's types hold. Tests hold every twin to its program, line for line, on every
gate scenario, on the benchmark fleet healthy and broken, and on generated clusters.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from gpuplatform.gates.matchers import (
    DEVICE_PLUGIN_RESOURCE_PREFIX,
    DRA_CONTROLLER_COMPONENT,
    DRA_KUBELET_PLUGIN_SUFFIX,
)

__all__ = ["TWINS", "Unlike", "found"]

Object = Mapping[str, Any]
Lines = list[str]


class Unlike(Exception):
    """The document holds a value of a type the API never serves: the jq program judges it."""


# --- reading fields as the API types them ------------------------------------------------------


def _field(obj: Any, name: str) -> Any:
    """`.name` of an object or null (jq's null for a missing field); Unlike for anything else."""
    if obj is None:
        return None
    if type(obj) is not dict:
        raise Unlike(name)
    return obj.get(name)


def _at(obj: Any, *path: str) -> Any:
    for name in path:
        obj = _field(obj, name)
    return obj


def _text(value: Any) -> str | None:
    if value is not None and type(value) is not str:
        raise Unlike(value)
    return value


def _object(value: Any) -> dict[str, Any]:
    """An object, null read as `{}` (`// {}`)."""
    if value is None:
        return {}
    if type(value) is not dict:
        raise Unlike(value)
    return value


def _items(value: Any) -> list[Any]:
    """A list, null read as `[]` (`// []`)."""
    if value is None:
        return []
    if type(value) is not list:
        raise Unlike(value)
    return value


def _labels(obj: Any) -> dict[str, Any]:
    labels = _object(_at(obj, "metadata", "labels"))
    for value in labels.values():
        _text(value)
    return labels


def _name(obj: Any) -> str:
    name = _text(_at(obj, "metadata", "name"))
    if name is None:
        raise Unlike("metadata.name")
    return name


def _nsname(obj: Any) -> str:
    namespace = _text(_at(obj, "metadata", "namespace"))
    return _name(obj) if namespace is None else f"{namespace}/{_name(obj)}"


def _live(pod: Any) -> bool:
    return _text(_at(pod, "status", "phase")) not in ("Succeeded", "Failed")


def _statuses(pod: Any) -> list[dict[str, Any]]:
    return [_object(s) for s in _items(_at(pod, "status", "containerStatuses"))]


def _ready(pod: Any) -> bool:
    statuses = _statuses(pod)
    return len(statuses) > 0 and all(s.get("ready") is True for s in statuses)


def _unready(pod: Any) -> str:
    return ",".join(_text(s.get("name")) or "" for s in _statuses(pod) if s.get("ready") is not True)


def _by_node(objects: Iterable[Any]) -> dict[str, list[Any]]:
    """`by_node`: objects by `.spec.nodeName` (those without one left out), in their order."""
    out: dict[str, list[Any]] = {}
    for obj in objects:
        node = _text(_at(obj, "spec", "nodeName"))
        if node is not None:
            out.setdefault(node, []).append(obj)
    return out


def _join(values: Iterable[str]) -> str:
    return ", ".join(values)


def _or(value: str | None, alternative: str) -> str:
    """`value // alternative` for a string or null (jq's `//` keeps "", which Python's `or` does not)."""
    return alternative if value is None else value


# --- the pools' nodes and the coverage lines -------------------------------------------------------


def found(document: Object, data: Object) -> list[dict[str, Any]]:
    """`found($in)`: each pool of `$data.pools` with `found`, its nodes present in the cluster."""
    nodes = _items(document["nodes"])
    present = {_name(n) for n in nodes}
    pools = []
    for pool in data["pools"]:
        if pool["names"]:
            names = [name for name in pool["names"] if name in present]
        elif pool["labels"]:
            want = list(pool["labels"].items())
            names = [_name(n) for n in nodes if all(_labels(n).get(key) == value for key, value in want)]
        else:
            names = []
        pools.append(pool | {"found": names})
    return pools


def _coverage(pools: Iterable[dict[str, Any]]) -> Lines:
    lines = []
    for pool in pools:
        if len(pool["found"]) >= pool["minNodes"]:
            continue
        if pool["names"]:
            present = set(pool["found"])
            absent = [name for name in pool["names"] if name not in present]
            lines.append(f"unknown: pool {pool['name']}: node(s) {_join(absent)} not in the cluster")
        else:
            lines.append(
                f"unknown: pool {pool['name']} must have at least {pool['minNodes']} node(s) "
                f"({pool['describe']}); {len(pool['found'])} found"
            )
    return lines


def _need(document: Object, kinds: tuple[str, ...]) -> Lines:
    missing = [kind for kind in kinds if document.get(kind) is None]
    return [f"unknown: {', '.join(missing)} could not be read"] if missing else []


# --- allocator exclusivity ------------------------------------------------------------------------


def _device_plugin_pod(pod: Any, data: Object) -> bool:
    key, value = data["devicePluginLabel"]
    return bool(_labels(pod).get(key) == value)


def _kubelet_plugin_pod(pod: Any, data: Object) -> bool:
    if _text(_at(pod, "metadata", "namespace")) != data["driverNamespace"]:
        return False
    owners = _items(_at(pod, "metadata", "ownerReferences"))
    for owner in owners:
        kind, name = _field(owner, "kind"), _text(_field(owner, "name"))
        if name is None:
            raise Unlike("ownerReferences.name")  # jq's endswith fails on a missing name
        if kind == "DaemonSet" and name.endswith(DRA_KUBELET_PLUGIN_SUFFIX):
            return True
    return False


def _plugin_resources(node: Any) -> list[str]:
    """`dp_resources`: the device plugin's non-zero `nvidia.com/*` allocatable resources."""
    allocatable = _object(_at(node, "status", "allocatable"))
    return [
        f"{key}={_text(value)}"
        for key, value in allocatable.items()
        if key.startswith(DEVICE_PLUGIN_RESOURCE_PREFIX) and _text(value) != "0"
    ]


def _mode_nodes(nodes: list[Any], pools: list[dict[str, Any]], mode_label: str) -> dict[str, dict[str, Any]]:
    declared: dict[str, dict[str, Any]] = {}
    for node in nodes:
        mode = _labels(node).get(mode_label) or ""
        if mode in ("dra", "legacy"):
            declared[_name(node)] = {"mode": mode, "pool": None}
    for pool in pools:
        for name in pool["found"]:
            declared[name] = {"mode": pool["mode"], "pool": pool["name"]}
    return declared


def allocator_exclusivity(document: Object, data: Object, pools: list[dict[str, Any]]) -> Lines:
    """Twin of `gate_allocator_exclusivity`."""
    need = _need(document, ("nodes", "pods", "resourceslices"))
    if need:
        return need
    nodes = _items(document["nodes"])
    declared = _mode_nodes(nodes, pools, data["modeLabel"])
    pods_on = _by_node(p for p in _items(document["pods"]) if _live(p))
    publishing = {
        node
        for s in _items(document["resourceslices"])
        if _at(s, "spec", "driver") == data["driver"] and _items(_at(s, "spec", "kinds"))
        for node in [_text(_at(s, "spec", "nodeName"))]
        if node is not None
    }
    lines = _coverage(pools)
    for node in nodes:
        lines += _exclusive(node, declared, pods_on, publishing, data)
    return lines


def _exclusive(
    node: Any,
    declared: Mapping[str, dict[str, Any]],
    pods_on: Mapping[str, list[Any]],
    publishing: set[str],
    data: Object,
) -> Lines:
    name = _name(node)
    mode_label = _labels(node).get(data["modeLabel"])
    d = declared.get(name)
    here = pods_on.get(name, [])
    dp = [p for p in here if _device_plugin_pod(p, data)]
    kp = [p for p in here if _kubelet_plugin_pod(p, data)]
    res = _plugin_resources(node)
    slices = name in publishing
    v: Lines = []
    if (dp or res) and (kp or slices):
        plugin = _join(res + [_nsname(p) for p in dp])
        dra = _join([_nsname(p) for p in kp] + (["ResourceSlice devices"] if slices else []))
        v.append(
            f"violation: node {name} has TWO ALLOCATORS: the device plugin ({plugin}) and the DRA driver ({dra})"
        )
    if d is not None and d["mode"] == "dra":
        if d["pool"] is not None and mode_label != "dra":
            v.append(
                f"violation: node {name} of pool {d['pool']} is DRA in this wave but carries "
                f"{data['modeLabel']}={_or(mode_label, '<absent>')}"
            )
        v += [f"violation: DRA node {name} runs device-plugin pod {_nsname(p)}" for p in dp]
        v += [
            f"violation: DRA node {name} advertises {r} (the device plugin still allocates there)"
            for r in res
        ]
        if not kp:
            v.append(f"violation: DRA node {name} runs no DRA kubelet plugin")
        v += [
            f"violation: DRA kubelet plugin {_nsname(p)} on {name} is not ready (containers not ready: {_unready(p)})"
            for p in kp
            if not _ready(p)
        ]
    elif d is not None:
        if d["pool"] is not None and mode_label == "dra":
            v.append(
                f"violation: node {name} of pool {d['pool']} is legacy in this wave but carries {data['modeLabel']}=dra"
            )
        v += [f"violation: legacy node {name} runs DRA kubelet plugin pod {_nsname(p)}" for p in kp]
        if slices:
            v.append(f"violation: legacy node {name} publishes {data['driver']} devices in a ResourceSlice")
        if data["devicePluginEnabled"] and not any(_ready(p) for p in dp):
            v.append(f"violation: legacy node {name} has no ready device-plugin pod")
    if v or d is None:
        return v
    if d["mode"] == "dra":
        kubelet = _join(_nsname(p) for p in kp)
        return [f"proof: DRA node {name}: kubelet plugin {kubelet} ready, no device-plugin pod or resource"]
    proof = f"proof: legacy node {name}: no DRA kubelet plugin, no {data['driver']} devices"
    if data["devicePluginEnabled"]:
        proof += f", device plugin {_join(_nsname(p) for p in dp if _ready(p))} ready"
    return [proof]


# --- operands -----------------------------------------------------------------------------------


def _dra_controller_pod(pod: Any, data: Object) -> bool:
    key_suffix, value = DRA_CONTROLLER_COMPONENT
    return _text(_at(pod, "metadata", "namespace")) == data["driverNamespace"] and any(
        key.endswith(key_suffix) and label == value for key, label in _labels(pod).items()
    )


def operands(document: Object, data: Object, pools: list[dict[str, Any]]) -> Lines:
    """Twin of `gate_operands`."""
    need = _need(document, ("nodes", "pods"))
    if need:
        return need
    pods = [p for p in _items(document["pods"]) if _live(p)]
    pods_on = _by_node(pods)
    labels_of = {_name(n): _labels(n) for n in _items(document["nodes"])}
    dra = [pool for pool in pools if pool["mode"] == "dra"]
    lines = _coverage(dra)
    for pool in dra:
        for name in pool["found"]:
            node_labels = labels_of.get(name) or {}
            operator_pods = [
                p
                for p in pods_on.get(name, [])
                if _text(_at(p, "metadata", "namespace")) == data["operatorNamespace"]
            ]
            for o in data["operands"]:
                if node_labels.get(o["deployLabel"]) != "true":
                    continue
                key, value = o["label"]
                op = [p for p in operator_pods if _labels(p).get(key) == value]
                lines.append(_operand_line(name, o, op))
    if data["driverController"]:
        controllers = [p for p in pods if _dra_controller_pod(p, data)]
        ready = [p for p in controllers if _ready(p)]
        if ready:
            lines.append(f"proof: DRA driver controller {_nsname(ready[0])} ready")
        elif not controllers:
            lines.append(f"violation: the DRA driver controller runs no pod in {data['driverNamespace']}")
        else:
            first = controllers[0]
            lines.append(
                f"violation: DRA driver controller {_nsname(first)} is not ready (containers not ready: {_unready(first)})"
            )
    return lines


def _operand_line(node: str, operand: Object, pods: list[Any]) -> str:
    if not pods:
        return (
            f"violation: DRA node {node} runs no {operand['name']} pod ({'='.join(operand['label'])}) "
            f"although it carries {operand['deployLabel']}=true"
        )
    ready = [p for p in pods if _ready(p)]
    if ready:
        return f"proof: DRA node {node}: {operand['name']} {_nsname(ready[0])} ready"
    return (
        f"violation: {operand['name']} pod {_nsname(pods[0])} on DRA node {node} is not ready "
        f"(containers not ready: {_unready(pods[0])})"
    )


# --- inventory ----------------------------------------------------------------------------------

_UNITS = (
    ("Ki", 1024),
    ("Mi", 1048576),
    ("Gi", 1073741824),
    ("Ti", 1099511627776),
    ("k", 1000),
    ("M", 1000000),
    ("G", 1000000000),
    ("T", 1000000000000),
)
#: What jq's `tonumber` reads the same way as Python's float: a JSON number.
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")


def _number(text: str) -> float:
    if not _NUMBER.fullmatch(text):
        raise Unlike(text)
    return float(text)


def _bytes(quantity: str) -> float:
    """`bytes`: a quantity with one of the binary or decimal suffixes, in bytes."""
    for suffix, factor in _UNITS:
        if quantity.endswith(suffix):
            return _number(quantity[: -len(suffix)]) * factor
    return _number(quantity)


def _kind_problems(kind: Object, pool: Object, expected: Object, sizes: Mapping[str, float]) -> Lines:
    product, profile, memory = kind["productName"], kind["profile"], kind["memory"]
    mig = expected["type"] == "mig"
    bounds = expected["profiles"].get(_or(profile, "")) if mig else expected["memory"]
    problems = []
    if expected["productName"] is not None and product != expected["productName"]:
        problems.append(
            f"is {_or(product, '<no productName>')}, pool {pool['name']} declares {expected['productName']}"
        )
    if mig and expected["profiles"] and bounds is None:
        problems.append(f"is MIG profile {_or(profile, '<none>')}, not in pool {pool['name']}'s layout")
    elif bounds is None:
        pass
    elif memory is None:
        problems.append("publishes no memory capacity")
    else:
        size = sizes[memory] if memory in sizes else _bytes(memory)
        if size < bounds["low"] or size > bounds["high"]:
            problems.append(f"publishes memory {memory}; the catalog's figure is {bounds['describe']}")
    return problems


def _node_kinds(slices: list[Any], kind_type: Any) -> list[dict[str, Any]]:
    """The kinds of `kind_type` a node publishes in its slices of the newest pool generation."""
    generations = []
    for s in slices:
        generation = _at(s, "spec", "pool", "generation")
        if generation is None:
            generation = 0
        if type(generation) is not int:
            raise Unlike(generation)
        generations.append(generation)
    newest = max(generations, default=None)
    return [
        kind
        for s, generation in zip(slices, generations, strict=True)
        if generation == newest
        for kind in _items(_at(s, "spec", "kinds"))
        if kind["type"] == kind_type
    ]


def inventory(document: Object, data: Object, pools: list[dict[str, Any]]) -> Lines:
    """Twin of `gate_inventory`."""
    need = _need(document, ("nodes", "resourceslices", "deviceclasses"))
    if need:
        return need
    slices_on = _by_node(
        s for s in _items(document["resourceslices"]) if _at(s, "spec", "driver") == data["driver"]
    )
    dra = [pool for pool in pools if pool["mode"] == "dra"]
    nodes = []
    for pool in dra:
        expected = data["inventory"][pool["name"]]
        for name in pool["found"]:
            slices = slices_on.get(name, [])
            kinds = _node_kinds(slices, expected["type"])
            count = sum(len(kind["names"]) for kind in kinds)
            nodes.append((pool, expected, name, bool(slices), kinds, count))
    memories = {kind["memory"] for *_, kinds, _ in nodes for kind in kinds if type(kind["memory"]) is str}
    sizes = {memory: _bytes(memory) for memory in memories}
    lines = _coverage(dra)
    for pool, expected, name, published, kinds, count in nodes:
        if not published:
            lines.append(f"violation: node {name} publishes no {data['driver']} ResourceSlice")
            continue
        v = []
        if count != expected["count"]:
            v.append(
                f"violation: node {name} publishes {count} {expected['type']} device(s), "
                f"pool {pool['name']} declares {expected['count']}"
            )
        for kind in kinds:
            problems = _kind_problems(kind, pool, expected, sizes)
            if problems:
                v += [f"violation: {name}/{_shown(device)} {p}" for device in kind["names"] for p in problems]
        if v:
            lines += v
            continue
        proof = f"proof: node {name}: {count} {expected['type']} device(s)"
        if expected["productName"] is not None:
            proof += f", {expected['productName']}"
        if expected["memory"] is not None:
            shown = sorted({kind["memory"] for kind in kinds}, key=lambda m: (m is not None, m or ""))
            proof += f", memory {_join(m or '' for m in shown)}"
        lines.append(proof)
    classes = {_text(_at(c, "metadata", "name")) for c in _items(document["deviceclasses"])}
    for name in data["deviceClasses"]:
        if name in classes:
            lines.append(f"proof: DeviceClass {name} exists")
        else:
            lines.append(f"violation: DeviceClass {name} is missing")
    return lines


def _shown(value: str | None) -> str:
    """A value as jq's string interpolation shows it (null as `null`)."""
    return "null" if value is None else value


# --- claims -------------------------------------------------------------------------------------


def _dra_names(pools: Iterable[dict[str, Any]]) -> list[str]:
    return [name for pool in pools if pool["mode"] == "dra" for name in pool["found"]]


def _results(claim: Any, data: Object) -> list[dict[str, Any]]:
    """The claim's allocation results of the driver."""
    results = [_object(r) for r in _items(_at(claim, "status", "allocation", "devices", "results"))]
    return [r for r in results if r.get("driver") == data["driver"]]


def _claim_nodes(claim: Any, data: Object) -> list[str]:
    """`claim_nodes`: the nodes a claim's devices of the driver are allocated on, sorted."""
    results = _results(claim, data)
    if not results:
        return []
    named: list[Any] = [r.get("pool") for r in results]
    terms = _items(_at(claim, "status", "allocation", "nodeSelector", "nodeSelectorTerms"))
    for term in terms:
        for field in _items(_field(term, "matchFields")):
            if _field(field, "key") == "metadata.name":
                values = _field(field, "values")
                if values is None:
                    raise Unlike("values")  # jq cannot iterate over null
                named += _items(values)
    nodes: set[str] = set()
    for node in named:
        if type(node) is not str:
            raise Unlike(node)
        nodes.add(node)
    return sorted(nodes)


def rollback_safety(document: Object, data: Object, pools: list[dict[str, Any]]) -> Lines:
    """Twin of `gate_rollback_safety`."""
    need = _need(document, ("nodes", "pods", "resourceclaims"))
    if need:
        return need
    dra = _dra_names(pools)
    is_dra = set(dra)
    installed = data["driverInstalled"]
    why = "which this wave does not declare DRA" if installed else "and this wave has no DRA driver"

    def outside(node: str) -> bool:
        return not installed or node not in is_dra

    v = [
        f"violation: claim {_nsname(c)} is allocated on node {node}, {why}"
        for c in _items(document["resourceclaims"])
        for node in _claim_nodes(c, data)
        if outside(node)
    ]
    for pod in _items(document["pods"]):
        if _at(pod, "metadata", "deletionTimestamp") is None or not _holds_claims(pod):
            continue
        node = _text(_at(pod, "spec", "nodeName")) or ""
        if node != "" and outside(node):
            v.append(
                f"violation: pod {_nsname(pod)} with a resource claim is still terminating on node {node}, {why}"
            )
    if v:
        return v
    if installed:
        return [
            "proof: no claim allocated and no claim-holding pod terminating outside the DRA nodes "
            f"({_join(dra)})"
        ]
    return [f"proof: no {data['driver']} claim allocated anywhere and no claim-holding pod terminating"]


def _holds_claims(pod: Any) -> bool:
    """`has_claims`: the pod asks for claims, or the scheduler made it one for an extended resource."""
    claims = _items(_at(pod, "spec", "resourceClaims"))
    return len(claims) > 0 or _at(pod, "status", "extendedResourceClaimStatus") is not None


def claim_placement(document: Object, data: Object, pools: list[dict[str, Any]]) -> Lines:
    """Twin of `gate_claim_placement`."""
    need = _need(document, ("nodes", "resourceclaims"))
    if need:
        return need
    is_dra = set(_dra_names(pools))
    claims = [(c, nodes) for c in _items(document["resourceclaims"]) if (nodes := _claim_nodes(c, data))]
    if not claims:
        return [f"proof: no claim holds a {data['driver']} device"]
    lines = []
    for claim, nodes in claims:
        where = _join(
            f"{_shown(_text(r.get('driver')))}/{_shown(_text(r.get('pool')))}/{_shown(_text(r.get('device')))}"
            for r in _results(claim, data)
        )
        for node in nodes:
            if node in is_dra:
                lines.append(f"proof: claim {_nsname(claim)}: {where}")
            else:
                lines.append(
                    f"violation: claim {_nsname(claim)} is allocated on {node}, not a DRA node of this wave ({where})"
                )
    return lines


def cleanup(document: Object, data: Object, pools: list[dict[str, Any]]) -> Lines:
    """Twin of `gate_cleanup`."""
    need = _need(document, ("pods", "resourceclaims"))
    if need:
        return need
    pods: dict[str, Any] = {}
    for pod in _items(document["pods"]):
        uid = _text(_at(pod, "metadata", "uid"))
        if uid is None:
            raise Unlike("metadata.uid")
        pods[uid] = pod
    claims = _items(document["resourceclaims"])
    v = []
    for claim in claims:
        users = [u for u in _items(_at(claim, "status", "reservedFor")) if _field(u, "resource") == "pods"]
        v += _stale(
            pods,
            claim,
            users,
            "claim {claim} is reserved for pod {pod}, which no longer exists",
            "claim {claim} is still reserved for pod {pod}, which has finished ({phase})",
        )
    allocated = [c for c in claims if _at(c, "status", "allocation") is not None]
    for claim in allocated:
        owners = [
            o
            for o in _items(_at(claim, "metadata", "ownerReferences"))
            if _field(o, "kind") == "Pod" and _field(o, "controller") is True
        ]
        v += _stale(
            pods,
            claim,
            owners,
            "claim {claim} of pod {pod}, which no longer exists, is still allocated",
            "claim {claim} of finished pod {pod} is still allocated",
        )
    if v:
        return v
    return [f"proof: {len(allocated)} allocated claim(s), each reserved only for pods that exist and may run"]


def _stale(pods: Mapping[str, Any], claim: Any, references: list[Any], gone: str, finished: str) -> Lines:
    """A violation for each reference of `claim` (a reservation, an owner) to a pod that no longer
    exists (`gone`) or has finished (`finished`); the texts name {claim}, {pod} and its {phase}."""
    lines = []
    for reference in references:
        pod, name = _pod_of(pods, reference), _shown(_text(_field(reference, "name")))
        if pod is None:
            lines.append("violation: " + gone.format(claim=_nsname(claim), pod=name))
        elif not _live(pod):
            phase = _shown(_text(_at(pod, "status", "phase")))
            lines.append("violation: " + finished.format(claim=_nsname(claim), pod=name, phase=phase))
    return lines


def _pod_of(pods: Mapping[str, Any], reference: Any) -> Any:
    uid = _text(_field(reference, "uid"))
    if uid is None:
        raise Unlike("uid")  # jq cannot look an object up by null
    return pods.get(uid)


def spec_nodes_exist(document: Object, data: Object, pools: list[dict[str, Any]]) -> Lines:
    """Twin of `gate_spec_nodes_exist`."""
    need = _need(document, ("nodes",))
    if need:
        return need
    lines = []
    for pool in pools:
        if pool["names"]:
            present = set(pool["found"])
            missing = [name for name in pool["names"] if name not in present]
            lines += [
                f"violation: node {name} of pool {pool['name']} is not in the cluster" for name in missing
            ]
            if not missing:
                lines.append(f"proof: pool {pool['name']}: {_join(pool['found'])} present")
        elif not pool["labels"]:
            lines.append(
                f"violation: pool {pool['name']} names neither nodes nor node labels: no gate can find its nodes"
            )
        else:
            labels = ",".join(f"{key}={value}" for key, value in pool["labels"].items())
            lines.append(f"proof: pool {pool['name']}: {len(pool['found'])} node(s) labelled {labels}")
    return lines


# --- the validation pods: claim pilot and bridge ------------------------------------------------------


def _job_pods(document: Object, namespace: str, job: str) -> list[Any]:
    pods = []
    for pod in _items(document["pods"]):
        labels = _labels(pod)
        name = labels.get("batch.kubernetes.io/job-name")
        if (
            _text(_at(pod, "metadata", "namespace")) == namespace
            and (labels.get("job-name") if name is None else name) == job
        ):
            pods.append(pod)
    return pods


def _current(pods: list[Any]) -> Any:
    """`current`: the running pod, else a live one, else the first."""
    for pod in pods:
        if _text(_at(pod, "status", "phase")) == "Running":
            return pod
    return next((pod for pod in pods if _live(pod)), pods[0])


def _uuids(log: str) -> list[str]:
    return [line.split("(UUID: ")[1].split(")")[0] for line in log.split("\n") if "(UUID: " in line]


def _gpu_lines(log: str) -> list[str]:
    return [line for line in log.split("\n") if line.startswith("GPU ") and ": " in line]


def _claim_result(document: Object, namespace: str, name: str, data: Object) -> dict[str, Any] | None:
    for claim in _items(document["resourceclaims"]):
        if _at(claim, "metadata", "namespace") == namespace and _at(claim, "metadata", "name") == name:
            results = _results(claim, data)
            return {"claim": claim, "result": results[0] if results else None}
    return None


def _device_uuid(document: Object, data: Object, pool: str | None, device: str | None) -> str | None:
    """`device_uuid`: the uuid the driver's slices of `pool` publish for `device`."""
    for s in _items(document["resourceslices"]):
        if _at(s, "spec", "driver") != data["driver"] or _at(s, "spec", "pool", "name") != pool:
            continue
        for kind in _items(_at(s, "spec", "kinds")):
            for name, uuid in zip(kind["names"], kind["uuids"], strict=True):
                if name == device and uuid is not None:
                    return _text(uuid)
    return None


def _log(document: Object, pod_name: str) -> str | None:
    return _text(_object(document.get("logs")).get(pod_name))


def claim_pilot(document: Object, data: Object, pools: list[dict[str, Any]]) -> Lines:
    """Twin of `gate_claim_pilot`."""
    need = _need(document, ("nodes", "pods", "resourceclaims", "resourceslices"))
    if need:
        return need
    dra = _dra_names(pools)
    v = data["validation"]
    pods = _job_pods(document, v["namespace"], v["job"])
    if not pods:
        return [f"unknown: no pod of the validation Job {v['namespace']}/{v['job']} yet"]
    pod = _current(pods)
    pn = _nsname(pod)
    phase = _text(_at(pod, "status", "phase"))
    if phase != "Running":
        return [f"unknown: validation pod {pn} is {_or(phase, 'Pending')}, not holding its claim"]
    statuses = [_object(s) for s in _items(_at(pod, "status", "resourceClaimStatuses"))]
    mine = [s for s in statuses if s.get("name") == v["claim"]]
    cn = _text(mine[0].get("resourceClaimName")) if mine else None
    if cn is None:
        return [f"unknown: validation pod {pn} has no generated claim yet"]
    cr = _claim_result(document, v["namespace"], cn, data)
    if cr is None:
        return [f"unknown: claim {v['namespace']}/{cn} of {pn} could not be read"]
    if cr["result"] is None:
        return [
            f"violation: claim {v['namespace']}/{cn} of running pod {pn} is not allocated by {data['driver']}"
        ]
    pool, device = _text(cr["result"].get("pool")), _text(cr["result"].get("device"))
    uuid = _device_uuid(document, data, pool, device)
    log = _log(document, pn)
    node = _text(_at(pod, "spec", "nodeName"))
    f = []
    if pool not in dra:
        f.append(
            f"violation: claim {v['namespace']}/{cn} is allocated on {_shown(pool)}, not a DRA node of this wave"
        )
    if node != pool:
        f.append(f"violation: pod {pn} runs on {_shown(node)}, its claim's device is on {_shown(pool)}")
    if uuid is None:
        f.append(f"violation: device {_shown(pool)}/{_shown(device)} has no uuid in its ResourceSlice")
    if log is None:
        f.append(f"unknown: the log of {pn} was not read")
    elif not _uuids(log):
        f.append(f"unknown: {pn} has printed no nvidia-smi -L line yet")
    elif uuid is not None and uuid not in _uuids(log):
        f.append(
            f"violation: the container of {pn} saw {_join(_uuids(log))}; its claim holds "
            f"{_shown(pool)}/{_shown(device)} with uuid {uuid}"
        )
    if f:
        return f
    return [
        f"proof: claim {v['namespace']}/{cn} holds {_shown(pool)}/{_shown(device)} (uuid {uuid}), "
        f"seen by the container of {pn} on {_shown(node)}",
        f"act: release {v['namespace']} {_name(pod)} {cn}",
    ]


def bridge(document: Object, data: Object, pools: list[dict[str, Any]]) -> Lines:
    """Twin of `gate_bridge`."""
    need = _need(document, ("nodes", "pods", "resourceclaims", "resourceslices"))
    if need:
        return need
    dra = _dra_names(pools)
    legacy = [name for pool in pools if pool["mode"] == "legacy" for name in pool["found"]]
    b = data["bridge"]
    lines = []
    for side in b["sides"]:
        pods = _job_pods(document, b["namespace"], side["job"])
        if not pods:
            lines.append(f"unknown: no pod of the bridge Job {b['namespace']}/{side['job']} yet")
            continue
        lines += _bridge_side(document, data, b["namespace"], side, _current(pods), dra, legacy)
    if any(line.startswith(("violation: ", "unknown: ")) for line in lines):
        return [line for line in lines if not line.startswith("act: ")]
    return lines


def _bridge_side(
    document: Object, data: Object, namespace: str, side: Object, pod: Any, dra: list[str], legacy: list[str]
) -> Lines:
    pn = _nsname(pod)
    node = _text(_at(pod, "spec", "nodeName")) or ""
    cn = _text(_at(pod, "status", "extendedResourceClaimStatus", "resourceClaimName"))
    log = _log(document, pn)
    phase = _text(_at(pod, "status", "phase"))
    if phase != "Running":
        return [f"unknown: bridge pod {pn} is {_or(phase, 'Pending')}"]
    if log is None:
        return [f"unknown: the log of {pn} was not read"]
    gpus = len(_gpu_lines(log))
    if gpus == 0:
        return [f"unknown: {pn} has printed no nvidia-smi -L line yet"]
    f = []
    if gpus != 1:
        f.append(f"violation: {pn} requested one nvidia.com/gpu and saw {gpus} GPUs")
    if side["side"] == "dra":
        if node not in dra:
            f.append(f"violation: {pn} runs on {node}, not a DRA node of this wave")
        if cn is None:
            f.append(
                f"violation: {pn} on DRA node {node} got no claim from the bridge class "
                "(pod.status.extendedResourceClaimStatus is empty)"
            )
        else:
            cr = _claim_result(document, namespace, cn, data)
            if cr is None or cr["result"] is None:
                f.append(
                    f"violation: bridge claim {namespace}/{cn} of {pn} is not allocated by {data['driver']}"
                )
            else:
                result = cr["result"]
                uuid = _device_uuid(document, data, _text(result.get("pool")), _text(result.get("device")))
                if uuid not in _uuids(log):
                    f.append(
                        f"violation: {pn} saw {_join(_uuids(log))}; its bridge claim holds uuid {_shown(uuid)}"
                    )
    else:
        if node not in legacy:
            f.append(f"violation: {pn} runs on {node}, not a legacy node of this wave")
        if cn is not None:
            f.append(
                f"violation: {pn} on legacy node {node} was served by the DRA bridge (claim {cn}), not the device plugin"
            )
    if f:
        return f
    served = ", served by the device plugin" if cn is None else f" through bridge claim {namespace}/{cn}"
    return [
        f"proof: {side['side']} side: {pn} on {node} saw exactly one GPU ({_join(_uuids(log))}){served}",
        f"act: release {namespace} {_name(pod)} {_or(cn, '-')}",
    ]


#: gate id -> its twin: (the document as the program reads it, `$data`, the pools' nodes) -> lines.
TWINS: dict[str, Callable[[Object, Object, list[dict[str, Any]]], Lines]] = {
    "allocator-exclusivity": allocator_exclusivity,
    "inventory": inventory,
    "operands": operands,
    "rollback-safety": rollback_safety,
    "claim-pilot": claim_pilot,
    "bridge": bridge,
    "claim-placement": claim_placement,
    "cleanup": cleanup,
    "spec-nodes-exist": spec_nodes_exist,
}
