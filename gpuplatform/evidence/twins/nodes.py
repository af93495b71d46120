"""Twins of the programs that judge every node: allocator exclusivity, operands, inventory, and
the pools' nodes (spec-nodes-exist)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from gpuplatform.evidence.twins import reading as r
from gpuplatform.evidence.twins.selectors import reaches
from gpuplatform.gates.matchers import (
    DEVICE_PLUGIN_SOCKETS,
    DRA_CONTROLLER_COMPONENT,
    DRA_KUBELET_PLUGIN_SUFFIX,
    VISIBLE_DEVICES,
    exporter_in_dra_mode,
    is_device_plugin_image,
    is_gpu_stack_daemonset,
    shows_gpus,
)
from gpuplatform.labels import NVIDIA_RESOURCE_PREFIX

__all__ = ["allocator_exclusivity", "inventory", "operands", "spec_nodes_exist"]

# --- allocator exclusivity ------------------------------------------------------------------------


def _device_plugin_pod(pod: Any, data: r.Object) -> bool:
    """`device_plugin_pod`: the operator's label, or the plugin's image and its socket mount."""
    key, value = data["devicePluginLabel"]
    if r.labels(pod).get(key) == value:
        return True
    spec = r.field(pod, "spec")
    paths = (r.text(r.at(volume, "hostPath", "path")) for volume in r.items(r.field(spec, "volumes")))
    if not any(r.or_else(path, "").removesuffix("/") == DEVICE_PLUGIN_SOCKETS for path in paths):
        return False
    images = (r.field(container, "image") for container in r.items(r.field(spec, "containers")))
    return any(type(image) is str and is_device_plugin_image(image) for image in images)


def _owners(pod: Any) -> list[Any]:
    """`.metadata.ownerReferences[]?`: a list's items, a mapping's values, nothing for anything else."""
    owners = r.at(pod, "metadata", "ownerReferences")
    if type(owners) is dict:
        return list(owners.values())
    return owners if type(owners) is list else []


def _daemonset_pod(pod: Any, namespace: str) -> bool:
    """`daemonset_pod($ns)`: in `namespace`, made by a DaemonSet's controller (an apps/v1 owner
    reference with `controller: true`)."""
    if r.text(r.at(pod, "metadata", "namespace")) != namespace:
        return False
    return any(
        r.field(o, "kind") == "DaemonSet"
        and r.field(o, "apiVersion") == "apps/v1"
        and r.field(o, "controller") is True
        for o in _owners(pod)
    )


def _operator_device_plugin_pod(pod: Any, data: r.Object) -> bool:
    """`operator_device_plugin_pod`: a device plugin its DaemonSet runs in the operator's namespace."""
    return _device_plugin_pod(pod, data) and _daemonset_pod(pod, data["operatorNamespace"])


def _kubelet_plugin_pod(pod: Any, data: r.Object) -> bool:
    if not _daemonset_pod(pod, data["driverNamespace"]):
        return False
    for owner in _owners(pod):
        kind, name = r.field(owner, "kind"), r.text(r.field(owner, "name"))
        if name is None:
            raise r.Unlike("ownerReferences.name")  # jq's endswith fails on a missing name
        if kind == "DaemonSet" and name.endswith(DRA_KUBELET_PLUGIN_SUFFIX):
            return True
    return False


def _gpu_stack_pod(pod: Any, data: r.Object) -> bool:
    """`gpu_stack_pod`: a pod of one of the GPU stack's DaemonSets, in the operator's or the DRA
    driver's namespace (a tenant's pod never is, whatever its labels and owners)."""
    if not (_daemonset_pod(pod, data["operatorNamespace"]) or _daemonset_pod(pod, data["driverNamespace"])):
        return False
    for owner in _owners(pod):
        if r.field(owner, "kind") == "DaemonSet" and is_gpu_stack_daemonset(
            r.or_else(r.text(r.field(owner, "name")), "")
        ):
            return True
    return False


def _visible_devices(pod: Any) -> str | None:
    """`visible_devices`: the first NVIDIA_VISIBLE_DEVICES value that shows GPUs (every one read, as jq)."""
    values = [
        r.or_else(r.text(r.field(env, "value")), "")
        for container in r.containers(pod)
        for env in r.items(r.field(container, "env"))
        if r.field(env, "name") == VISIBLE_DEVICES
    ]
    shown = [value for value in values if shows_gpus(value)]
    return shown[0] if shown else None


def _third_allocator(pod: Any, data: r.Object) -> str | None:
    """`third_allocator_pod`: the value a pod reaches GPUs with, asking no allocator (None if it asks one)."""
    visible = _visible_devices(pod)
    if visible is None:
        return None
    requested = [
        key
        for container in r.containers(pod)
        for part in ("limits", "requests")
        for key in r.as_object(r.at(container, "resources", part))
        if key.startswith(NVIDIA_RESOURCE_PREFIX)
    ]
    if requested or r.items(r.at(pod, "spec", "resourceClaims")) or _gpu_stack_pod(pod, data):
        return None
    return visible


def _plugin_resources(node: Any) -> list[str]:
    """`dp_resources`: the device plugin's non-zero `nvidia.com/*` allocatable resources."""
    allocatable = r.as_object(r.at(node, "status", "allocatable"))
    return [
        f"{key}={r.shown(r.text(value))}"
        for key, value in allocatable.items()
        if key.startswith(NVIDIA_RESOURCE_PREFIX) and r.text(value) != "0"
    ]


def _mode_nodes(nodes: list[Any], pools: list[dict[str, Any]], mode_label: str) -> dict[str, dict[str, Any]]:
    declared: dict[str, dict[str, Any]] = {}
    for node in nodes:
        mode = r.labels(node).get(mode_label) or ""
        if mode in ("dra", "legacy"):
            declared[r.name(node)] = {"mode": mode, "pool": None}
    for pool in pools:
        for name in pool["found"]:
            declared[name] = {"mode": pool["mode"], "pool": pool["name"]}
    return declared


def allocator_exclusivity(document: r.Object, data: r.Object, pools: list[dict[str, Any]]) -> r.Lines:
    """Twin of `gate_allocator_exclusivity`."""
    need = r.need(document, ("nodes", "pods", "resourceslices"))
    if need:
        return need
    nodes = r.items(document["nodes"])
    declared = _mode_nodes(nodes, pools, data["modeLabel"])
    pods_on = r.by_node(p for p in r.items(document["pods"]) if r.live(p))
    published = [
        r.as_object(r.field(s, "spec"))
        for s in r.items(document["resourceslices"])
        if r.at(s, "spec", "driver") == data["driver"] and r.items(r.at(s, "spec", "kinds"))
    ]
    publishing = {node for spec in published if (node := r.text(spec.get("nodeName"))) is not None}
    wide: list[Any] = []
    for spec in published:
        if spec.get("nodeName") is None:
            wide += r.items(spec.get("deviceNodes")) if spec.get("perDeviceNodeSelection") is True else [spec]
    lines = r.coverage(pools)
    for node in nodes:
        lines += _exclusive(node, declared, pods_on, (publishing, wide), data)
    return lines


def _exclusive(
    node: Any,
    declared: Mapping[str, dict[str, Any]],
    pods_on: Mapping[str, list[Any]],
    slices_of: tuple[set[str], list[Any]],
    data: r.Object,
) -> r.Lines:
    name = r.name(node)
    node_labels = r.labels(node)
    mode_label = node_labels.get(data["modeLabel"])
    d = declared.get(name)
    here = pods_on.get(name, [])
    dp = [p for p in here if _device_plugin_pod(p, data)]
    kp = [p for p in here if _kubelet_plugin_pod(p, data)]
    res = _plugin_resources(node)
    blind = r.at(node, "status", "allocatable") is None
    publishing, wide = slices_of
    slices = name in publishing or any(reaches(s, node_labels, name) for s in wide)
    v: r.Lines = []
    if (dp or res) and (kp or slices):
        plugin = r.join(res + [r.nsname(p) for p in dp])
        dra = r.join([r.nsname(p) for p in kp] + (["ResourceSlice devices"] if slices else []))
        v.append(
            f"violation: node {name} has TWO ALLOCATORS: the device plugin ({plugin}) and the DRA driver ({dra})"
        )
    elif blind and (kp or slices or (d is not None and d["mode"] == "dra")):
        v.append(
            f"unknown: node {name} reports no status.allocatable: "
            "whether the device plugin advertises a resource there cannot be judged"
        )
    if d is not None and d["mode"] == "dra":
        if d["pool"] is not None and mode_label != "dra":
            v.append(
                f"violation: node {name} of pool {d['pool']} is DRA in this wave but carries "
                f"{data['modeLabel']}={r.or_else(mode_label, '<absent>')}"
            )
        v += [f"violation: DRA node {name} runs device-plugin pod {r.nsname(p)}" for p in dp]
        v += [
            f"violation: DRA node {name} advertises {resource} (the device plugin still allocates there)"
            for resource in res
        ]
        if not kp:
            v.append(f"violation: DRA node {name} runs no DRA kubelet plugin")
        v += [
            f"violation: DRA kubelet plugin {r.nsname(p)} on {name} is not ready (containers not ready: {r.unready(p)})"
            for p in kp
            if not r.ready(p)
        ]
    elif d is not None:
        if d["pool"] is not None and mode_label == "dra":
            v.append(
                f"violation: node {name} of pool {d['pool']} is legacy in this wave but carries {data['modeLabel']}=dra"
            )
        v += [f"violation: legacy node {name} runs DRA kubelet plugin pod {r.nsname(p)}" for p in kp]
        if slices:
            v.append(f"violation: legacy node {name} publishes {data['driver']} devices in a ResourceSlice")
        if data["devicePluginEnabled"] and not any(
            r.ready(p) and _operator_device_plugin_pod(p, data) for p in dp
        ):
            v.append(
                f"violation: legacy node {name} has no ready device-plugin pod of a DaemonSet in "
                f"{data['operatorNamespace']}"
            )
    if d is not None:
        mode = "DRA" if d["mode"] == "dra" else "legacy"
        for p in here:
            if (visible := _third_allocator(p, data)) is not None:
                v.append(
                    f"violation: pod {r.nsname(p)} on {mode} node {name} reaches GPUs through "
                    f"NVIDIA_VISIBLE_DEVICES={visible} with no allocator (no nvidia.com/* request, "
                    "no resource claim): a third allocator"
                )
    if v or d is None:
        return v
    if d["mode"] == "dra":
        kubelet = r.join(r.nsname(p) for p in kp)
        return [f"proof: DRA node {name}: kubelet plugin {kubelet} ready, no device-plugin pod or resource"]
    proof = f"proof: legacy node {name}: no DRA kubelet plugin, no {data['driver']} devices"
    if data["devicePluginEnabled"]:
        own = (r.nsname(p) for p in dp if r.ready(p) and _operator_device_plugin_pod(p, data))
        proof += f", device plugin {r.join(own)} ready"
    return [proof]


# --- operands -----------------------------------------------------------------------------------


def _dra_controller_pod(pod: Any, data: r.Object) -> bool:
    key_suffix, value = DRA_CONTROLLER_COMPONENT
    return r.text(r.at(pod, "metadata", "namespace")) == data["driverNamespace"] and any(
        key.endswith(key_suffix) and label == value for key, label in r.labels(pod).items()
    )


def operands(document: r.Object, data: r.Object, pools: list[dict[str, Any]]) -> r.Lines:
    """Twin of `gate_operands`."""
    need = r.need(document, ("nodes", "pods"))
    if need:
        return need
    pods = [p for p in r.items(document["pods"]) if r.live(p)]
    pods_on = r.by_node(pods)
    labels_of = {r.name(n): r.labels(n) for n in r.items(document["nodes"])}
    dra = [pool for pool in pools if pool["mode"] == "dra"]
    lines = r.coverage(dra)
    for pool in dra:
        for name in pool["found"]:
            node_labels = labels_of.get(name) or {}
            operator_pods = [p for p in pods_on.get(name, []) if _daemonset_pod(p, data["operatorNamespace"])]
            for o in data["operands"]:
                if node_labels.get(o["deployLabel"]) != "true":
                    continue
                key, value = o["label"]
                op = [p for p in operator_pods if r.labels(p).get(key) == value]
                lines.append(_operand_line(name, o, op))
    if data["driverController"]:
        controllers = [p for p in pods if _dra_controller_pod(p, data)]
        ready = [p for p in controllers if r.ready(p)]
        if ready:
            lines.append(f"proof: DRA driver controller {r.nsname(ready[0])} ready")
        elif not controllers:
            lines.append(f"violation: the DRA driver controller runs no pod in {data['driverNamespace']}")
        else:
            first = controllers[0]
            lines.append(
                f"violation: DRA driver controller {r.nsname(first)} is not ready (containers not ready: {r.unready(first)})"
            )
    return lines


def _operand_line(node: str, operand: r.Object, pods: list[Any]) -> str:
    if not pods:
        return (
            f"violation: DRA node {node} runs no {operand['name']} pod ({'='.join(operand['label'])}) "
            f"although it carries {operand['deployLabel']}=true"
        )
    ready = [p for p in pods if r.ready(p)]
    if (
        ready
        and operand.get("draEnv") is not None
        and not any(exporter_in_dra_mode(p, operand["draEnv"]) for p in ready)
    ):
        return (
            f"violation: {operand['name']} pod {r.nsname(ready[0])} on DRA node {node} runs without "
            f"{operand['draEnv']}=true: the metrics of DRA-allocated GPUs lose their pod"
        )
    if ready:
        return f"proof: DRA node {node}: {operand['name']} {r.nsname(ready[0])} ready"
    return (
        f"violation: {operand['name']} pod {r.nsname(pods[0])} on DRA node {node} is not ready "
        f"(containers not ready: {r.unready(pods[0])})"
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
        raise r.Unlike(text)
    return float(text)


def _bytes(quantity: str) -> float:
    """`bytes`: a quantity with one of the binary or decimal suffixes, in bytes."""
    for suffix, factor in _UNITS:
        if quantity.endswith(suffix):
            return _number(quantity[: -len(suffix)]) * factor
    return _number(quantity)


def _kind_problems(kind: r.Object, pool: r.Object, expected: r.Object, sizes: Mapping[str, float]) -> r.Lines:
    product, profile, memory = kind["productName"], kind["profile"], kind["memory"]
    mig = expected["type"] == "mig"
    bounds = expected["profiles"].get(r.or_else(profile, "")) if mig else expected["memory"]
    problems = []
    if expected["productName"] is not None and product != expected["productName"]:
        problems.append(
            f"is {r.or_else(product, '<no productName>')}, pool {pool['name']} declares {expected['productName']}"
        )
    if mig and expected["profiles"] and bounds is None:
        problems.append(f"is MIG profile {r.or_else(profile, '<none>')}, not in pool {pool['name']}'s layout")
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
        generation = r.at(s, "spec", "pool", "generation")
        if generation is None:
            generation = 0
        if type(generation) is not int:
            raise r.Unlike(generation)
        generations.append(generation)
    newest = max(generations, default=None)
    return [
        kind
        for s, generation in zip(slices, generations, strict=True)
        if generation == newest
        for kind in r.items(r.at(s, "spec", "kinds"))
        if kind["type"] == kind_type
    ]


def inventory(document: r.Object, data: r.Object, pools: list[dict[str, Any]]) -> r.Lines:
    """Twin of `gate_inventory`."""
    need = r.need(document, ("nodes", "resourceslices", "deviceclasses"))
    if need:
        return need
    slices_on = r.by_node(
        s for s in r.items(document["resourceslices"]) if r.at(s, "spec", "driver") == data["driver"]
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
    lines = r.coverage(dra)
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
                v += [
                    f"violation: {name}/{r.shown(device)} {p}" for device in kind["names"] for p in problems
                ]
        if v:
            lines += v
            continue
        proof = f"proof: node {name}: {count} {expected['type']} device(s)"
        if expected["productName"] is not None:
            proof += f", {expected['productName']}"
        if expected["memory"] is not None:
            shown = sorted({kind["memory"] for kind in kinds}, key=lambda m: (m is not None, m or ""))
            proof += f", memory {r.join(m or '' for m in shown)}"
        lines.append(proof)
    classes = {r.text(r.at(c, "metadata", "name")) for c in r.items(document["deviceclasses"])}
    for name in data["deviceClasses"]:
        if name in classes:
            lines.append(f"proof: DeviceClass {name} exists")
        else:
            lines.append(f"violation: DeviceClass {name} is missing")
    return lines


def spec_nodes_exist(document: r.Object, data: r.Object, pools: list[dict[str, Any]]) -> r.Lines:
    """Twin of `gate_spec_nodes_exist`."""
    need = r.need(document, ("nodes",))
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
                lines.append(f"proof: pool {pool['name']}: {r.join(pool['found'])} present")
        elif not pool["labels"]:
            lines.append(
                f"violation: pool {pool['name']} names neither nodes nor node labels: no gate can find its nodes"
            )
        else:
            labels = ",".join(f"{key}={value}" for key, value in pool["labels"].items())
            lines.append(f"proof: pool {pool['name']}: {len(pool['found'])} node(s) labelled {labels}")
    return lines
