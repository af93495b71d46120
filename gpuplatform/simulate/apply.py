"""What applying or deleting one rendered object does to the modelled cluster (both engines).

Node objects are partial and server-side applied: the engine's field manager owns the labels it
applied, and a label it applied before and no longer applies is removed; a label another manager
wrote last is left alone (Kubernetes server-side apply, `managedFields`: kubernetes-sigs/
structured-merge-diff v4, `merge/update.go`, `Updater.Apply` prunes the fields the applier owned and
no longer applies; kubernetes.io/docs/reference/using-api/server-side-apply, "Field management";
held by tests/simulate/test_known_failures.py, failure 2). Helm releases render
through `charts.py`; the chart's DeviceClasses belong to the release and go with it.
"""

from __future__ import annotations

import re
from typing import Any

from gpuplatform.charts.model import render_dra_driver
from gpuplatform.render.meta import Obj
from gpuplatform.simulate.model import DeviceClassState, Group, Release
from gpuplatform.simulate.rendered import ReleaseSpec
from gpuplatform.simulate.world import World

__all__ = [
    "RELEASE_KEYS",
    "apply_object",
    "delete_object",
    "install_release",
    "object_key",
    "set_node_labels",
]

#: chart name -> the key the cluster knows the release by.
RELEASE_KEYS = {
    "gpu-operator": "gpu-operator",
    "dra-driver-nvidia-gpu": "dra-driver",
    "nvidia-dra-driver-gpu": "dra-driver",
}
_QUOTED = re.compile(r"'((?:[^'\\]|\\.)*)'|\"((?:[^\"\\]|\\.)*)\"")


def object_key(obj: Obj) -> str:
    """`Kind/namespace/name` (cluster-scoped: `Kind//name`)."""
    meta = obj["metadata"]
    return f"{obj['kind']}/{meta.get('namespace', '')}/{meta['name']}"


def _groups_for(world: World, names: list[str]) -> list[Group]:
    """The groups holding exactly these nodes, splitting a group that holds some of them."""
    wanted = set(names)
    out: list[Group] = []
    for group in list(world.cluster.groups):
        inside = [n for n in group.nodes if n in wanted]
        if not inside:
            continue
        if len(inside) < len(group.nodes):
            part = group.split(0, f"~{len(world.cluster.groups)}")
            part.nodes = inside
            group.nodes = [n for n in group.nodes if n not in wanted]
            world.cluster.groups.insert(world.cluster.groups.index(group), part)
            out.append(part)
        else:
            out.append(group)
    return out


def set_node_labels(group: Group, labels: dict[str, str], manager: str) -> list[str]:
    """Server-side apply of a partial Node's labels by `manager`; the keys that changed."""
    changed = [k for k, v in labels.items() if group.labels.get(k) != v]
    for key in [k for k, owner in group.owners.items() if owner == manager and k not in labels]:
        group.set_label(key, None, manager)
        changed.append(key)
    for key, value in labels.items():
        group.set_label(key, value, manager)
    group.applied = dict(labels)
    return changed


def restore_node_labels(world: World, manager: str) -> list[str]:
    """Re-apply the Node labels `manager` applied wherever another manager changed them; the groups fixed."""
    fixed = []
    for g in world.cluster.groups:
        drifted = [k for k, v in g.applied.items() if g.labels.get(k) != v]
        if drifted:
            set_node_labels(g, dict(g.applied), manager)
            fixed.append(f"{g.name}: {', '.join(drifted)}")
    return fixed


def apply_nodes(world: World, nodes: list[Obj], manager: str) -> list[str]:
    """Apply partial Nodes, batched by identical labels; the changed `group: keys`.

    A Node is healthy as soon as it is applied: the engine goes on while the pods its new labels
    stop are still terminating (the world is `lagging`)."""
    batches: dict[tuple[tuple[str, str], ...], list[str]] = {}
    for obj in nodes:
        labels = obj["metadata"].get("labels") or {}
        batches.setdefault(tuple(sorted(labels.items())), []).append(obj["metadata"]["name"])
    changes = []
    for labels, names in batches.items():
        for group in _groups_for(world, names):
            keys = set_node_labels(group, dict(labels), manager)
            if keys:
                changes.append(f"{group.name}: {', '.join(sorted(set(keys)))}")
    world.lagging = world.lagging or bool(changes)
    return changes


def _chart_classes(world: World, release: Release) -> dict[str, dict[str, Any]]:
    if release.chart.endswith("dra-driver-nvidia-gpu") or release.chart.endswith("nvidia-dra-driver-gpu"):
        out = render_dra_driver(release.version, release.values, release.patches)
        return {} if out.error else out.classes
    return {}


def _put_class(world: World, name: str, spec: dict[str, Any], owner: str) -> None:
    """Create or update a DeviceClass; an update keeps its creation time (the bridge tie-break)."""
    cluster = world.cluster
    selectors = [s["cel"]["expression"] for s in spec.get("selectors") or [] if "cel" in s]
    expression = " && ".join(f"({e})" for e in selectors) or "true"
    current = cluster.classes.get(name)
    created = current.created if current is not None else cluster.tick()
    cluster.classes[name] = DeviceClassState(
        name, expression, str(spec.get("extendedResourceName", "")), created, owner
    )


def _sync_classes(world: World, owner: str, classes: dict[str, dict[str, Any]]) -> None:
    cluster = world.cluster
    cluster.version += 1
    for name in [n for n, c in cluster.classes.items() if c.owner == owner and n not in classes]:
        del cluster.classes[name]
    for name, spec in classes.items():
        _put_class(world, name, spec, owner)


def install_release(world: World, spec: ReleaseSpec, owner: str) -> str:
    """Install or upgrade a release; '' on success, else why the chart fails to render."""
    key = RELEASE_KEYS.get(spec.chart, spec.chart)
    release = Release(
        key,
        spec.chart,
        spec.version.lstrip("v") if key == "gpu-operator" else spec.version,
        dict(spec.values),
        list(spec.patches),
        owner,
    )
    if key == "dra-driver":
        out = render_dra_driver(release.version, release.values, release.patches)
        if out.error:
            return out.error
    world.cluster.releases[key] = release
    _sync_classes(world, f"helm:{key}", _chart_classes(world, release))
    return ""


def uninstall_release(world: World, chart: str) -> None:
    """`helm uninstall`: the release's objects, its chart classes included, are deleted."""
    key = RELEASE_KEYS.get(chart, chart)
    world.cluster.releases.pop(key, None)
    _sync_classes(world, f"helm:{key}", {})


def _quota(hard: dict[str, Any]) -> dict[str, int]:
    out = {}
    for key, value in hard.items():
        try:
            out[key] = int(str(value))
        except ValueError:
            continue
    return out


def _template_class(obj: Obj) -> str:
    requests = ((obj.get("spec") or {}).get("spec") or {}).get("devices", {}).get("requests") or [{}]
    first = requests[0]
    if "exactly" in first:
        return str(first["exactly"].get("deviceClassName", ""))
    subs = first.get("firstAvailable") or [{}]
    return str(subs[0].get("deviceClassName", ""))


def _policy_classes(policy: Obj) -> list[str]:
    for variable in policy["spec"].get("variables") or []:
        if variable.get("name") == "allowed":
            return [a or b for a, b in _QUOTED.findall(str(variable.get("expression", "")))]
    return []


def apply_object(world: World, obj: Obj, manager: str) -> str:
    """Apply one non-Node, non-Job object; a short description of what changed ('' if nothing)."""
    cluster = world.cluster
    cluster.version += 1
    kind, meta = obj["kind"], obj["metadata"]
    cluster.objects[object_key(obj)] = obj
    if kind == "Namespace" and meta["name"] not in cluster.namespaces:
        cluster.namespaces.add(meta["name"])
        release = next((r for r in cluster.releases.values() if r.name == "dra-driver"), None)
        if release is not None and meta["name"] == world.plan.platform.dra_driver.namespace:
            release.alive = True
        return f"Namespace {meta['name']} created"
    if kind == "DeviceClass":
        _put_class(world, meta["name"], obj.get("spec") or {}, manager)
        return f"DeviceClass {meta['name']} applied"
    if kind == "ResourceQuota":
        cluster.quotas[meta["namespace"]] = _quota((obj.get("spec") or {}).get("hard") or {})
    elif kind == "ResourceClaimTemplate":
        cluster.templates[f"{meta['namespace']}/{meta['name']}"] = _template_class(obj)
    elif kind == "ValidatingAdmissionPolicyBinding":
        policy = cluster.objects.get(f"ValidatingAdmissionPolicy//{obj['spec']['policyName']}")
        selector = ((obj["spec"].get("matchResources") or {}).get("namespaceSelector") or {}).get(
            "matchLabels"
        ) or {}
        namespace = selector.get("kubernetes.io/metadata.name")
        if policy is not None and namespace:
            cluster.allowed_classes[namespace] = _policy_classes(policy)
    return ""


def delete_object(world: World, obj: Obj) -> str:
    """Delete one object the engine prunes; what it took with it."""
    cluster = world.cluster
    cluster.version += 1
    kind, meta = obj["kind"], obj["metadata"]
    cluster.objects.pop(object_key(obj), None)
    if kind == "Node":
        world.fail("never-delete-nodes", f"the engine deletes Node {meta['name']}", [f"Node/{meta['name']}"])
    if kind == "DeviceClass":
        cluster.classes.pop(meta["name"], None)
    elif kind == "Namespace":
        ns = meta["name"]
        cluster.namespaces.discard(ns)
        cluster.quotas.pop(ns, None)
        cluster.allowed_classes.pop(ns, None)
        cluster.templates = {k: v for k, v in cluster.templates.items() if not k.startswith(f"{ns}/")}
        for w in cluster.workloads:
            if w.namespace == ns:
                w.evict(f"Namespace {ns} deleted", delete=True)
        release = cluster.releases.get("dra-driver")
        if release is not None and ns == world.plan.platform.dra_driver.namespace:
            release.alive = False
            return f"Namespace {ns} deleted: the DRA driver's DaemonSet and controller go with it"
        return f"Namespace {ns} deleted"
    elif kind == "ResourceQuota":
        cluster.quotas.pop(meta["namespace"], None)
    elif kind == "ResourceClaimTemplate":
        cluster.templates.pop(f"{meta['namespace']}/{meta['name']}", None)
    elif kind == "ValidatingAdmissionPolicyBinding":
        selector = ((obj["spec"].get("matchResources") or {}).get("namespaceSelector") or {}).get(
            "matchLabels"
        ) or {}
        cluster.allowed_classes.pop(str(selector.get("kubernetes.io/metadata.name")), None)
    elif kind == "Job":
        cluster.jobs.pop(f"{meta.get('namespace', '')}/{meta['name']}", None)
    return f"{kind} {meta['name']} deleted"
