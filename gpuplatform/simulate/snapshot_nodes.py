"""One model node as `kubectl get -o json` shows it: the Node, the pods the DaemonSets run on it, its
ResourceSlices.

- Node: the kubelet's well-known labels (`kubernetes.io/hostname`, `kubernetes.io/os`,
  `kubernetes.io/arch`; kubernetes `pkg/kubelet/kubelet_node_status.go` `initialNode`), GPU Feature
  Discovery's product, count and `nvidia.com/mig.capable` (gpu-operator v26.3.1
  `controllers/state_manager.go` reads the same keys), the provisioner's pool label
  (`gates/nodes.py`), the labels the model's controllers and engines set, the taints, and
  `nvidia.com/gpu` in `allocatable` while the device plugin is registered.
- Operand pods: one per operand the GPU Operator runs on the node, labelled as its DaemonSet's
  pod template (gpu-operator v26.3.1 `assets/state-*/0500_daemonset.yaml`, `app: <name>`; the driver
  also `app.kubernetes.io/component: nvidia-driver`); ready when running, Pending in its init
  containers while waiting, not ready when crash-looping.
- The DRA kubelet plugin pod: owned by the DaemonSet `<chart name>-kubelet-plugin`, one container per
  enabled resource (`gpus`, `compute-domains`; chart `templates/kubeletplugin.yaml`).
- ResourceSlices: the catalog's (`inventory.slices_for_node`) while published or stale.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from gpuplatform.charts.facts import chart_facts
from gpuplatform.errors import InputError
from gpuplatform.evidence.summary import summarise
from gpuplatform.gates.matchers import DRA_KUBELET_PLUGIN_SUFFIX, OPERAND_DAEMONSETS, OPERANDS
from gpuplatform.gates.nodes import pool_selector
from gpuplatform.inventory.catalog import slices_for_node
from gpuplatform.kube.nodes import well_known_labels
from gpuplatform.labels import GPU_RESOURCE
from gpuplatform.model.nodes import NodePool
from gpuplatform.simulate.controllers import owner_references, suffix
from gpuplatform.simulate.groups import gfd_labels
from gpuplatform.simulate.model import Group
from gpuplatform.simulate.world import World
from gpuplatform.versions import DCGM_EXPORTER_DRA_ENV

__all__ = [
    "device_list",
    "dra_chart_name",
    "kubelet_plugin_pod",
    "node_objects",
    "operand_pod",
    "pod_object",
    "summarised_slices",
]

#: GPU Feature Discovery; gpu-operator v26.3.1 controllers/state_manager.go `migCapableLabelKey`.
_OPERAND_LABELS = {o.name: dict([o.label]) for o in OPERANDS}


def _pool(world: World, group: Group) -> NodePool:
    return world.plan.pools[group.pool]


def node_object(world: World, group: Group, name: str) -> dict[str, Any]:
    """The Node `name` of `group`."""
    pool = _pool(world, group)
    labels = (
        well_known_labels(name, pool.instance_type)
        | pool_selector(pool).member_labels()
        | gfd_labels(pool, group)
    )
    labels |= group.labels
    allocatable = {"cpu": "64", "memory": "1056457256Ki", "pods": "110"}
    if group.device_plugin_registered:
        allocatable[GPU_RESOURCE] = str(group.gpus)
    spec: dict[str, Any] = {}
    if group.taints:
        spec["taints"] = [dict(t) for t in group.taints]
    if group.cordoned:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": f"uid-node-{name}", "labels": labels},
        "spec": spec,
        "status": {"capacity": dict(allocatable), "allocatable": allocatable},
    }


def pod_object(
    name: str,
    namespace: str,
    node: str,
    labels: dict[str, str],
    containers: list[str],
    state: str = "running",
    owners: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A pod: `state` is `running`, `unready`, `pending` (in its init containers), `terminating`
    (deletionTimestamp set, containers stopping) or `succeeded`."""
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{namespace}-{name}",
        "labels": labels,
    }
    if owners:
        meta["ownerReferences"] = owners
    if state == "terminating":
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    phase = {"pending": "Pending", "succeeded": "Succeeded"}.get(state, "Running")
    ready = state == "running"
    status: dict[str, Any] = {"phase": phase}
    if state != "succeeded":
        status["containerStatuses"] = [
            {"name": c, "ready": ready, "started": phase == "Running"} for c in containers
        ]
    spec: dict[str, Any] = {"containers": [{"name": c} for c in containers]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


_STATES = {"running": "running", "waiting": "pending", "crashloop": "unready", "terminating": "terminating"}


def dra_chart_name(world: World) -> str:
    """The DRA driver chart's name (its objects are named after it), as installed or as the spec pins it."""
    release = world.cluster.releases.get("dra-driver")
    return _chart_name(
        release.version if release is not None else world.plan.platform.dra_driver.chart_version
    )


@lru_cache(maxsize=64)
def _chart_name(version: str) -> str:
    return chart_facts("dra-driver", version)[0].chart


def operand_pod(namespace: str, node: str, operand: str, state: str = "running") -> dict[str, Any]:
    """The pod the DaemonSet of GPU Operator operand `operand` runs on `node`."""
    daemonset, labels = OPERAND_DAEMONSETS[operand]
    return pod_object(
        f"{daemonset}-{suffix(node, operand)}",
        namespace,
        node,
        _OPERAND_LABELS.get(operand, {}) | labels | {"app.kubernetes.io/part-of": "gpu-operator"},
        [daemonset],
        state,
        owner_references("DaemonSet", daemonset)[0],
    )


def kubelet_plugin_pod(
    namespace: str, chart: str, node: str, containers: list[str], state: str = "running"
) -> dict[str, Any]:
    """The pod the DRA driver's kubelet plugin DaemonSet (named after chart `chart`) runs on `node`."""
    daemonset = f"{chart}{DRA_KUBELET_PLUGIN_SUFFIX}"
    return pod_object(
        f"{daemonset}-{suffix(node, daemonset)}",
        namespace,
        node,
        {f"{chart}-component": "kubelet-plugin"},
        containers,
        state,
        owner_references("DaemonSet", daemonset)[0],
    )


def node_pods(world: World, group: Group, name: str) -> list[dict[str, Any]]:
    """The operand pods and the DRA kubelet plugin pod on node `name` of `group`."""
    p = world.plan.platform
    pods = []
    for operand, phase in sorted(group.operands.items()):
        if phase not in _STATES:
            continue
        pod = operand_pod(p.gpu_operator.namespace, name, operand, _STATES[phase])
        if operand == "dcgm-exporter" and world.operator().exporter_dra:
            # the operator copies `dcgmExporter.env` onto the exporter's container (gpu-operator
            # v26.3.1 controllers/object_controls.go `TransformDCGMExporter`)
            pod["spec"]["containers"][0]["env"] = [{"name": DCGM_EXPORTER_DRA_ENV, "value": "true"}]
        pods.append(pod)
    if group.kubelet_plugin != "absent":
        state = "running" if group.kubelet_plugin == "running" else "terminating"
        plugin = kubelet_plugin_pod(
            p.dra_driver.namespace, dra_chart_name(world), name, _plugin_containers(world), state
        )
        pods.append(plugin)
    return pods


def _plugin_containers(world: World) -> list[str]:
    release = world.cluster.releases.get("dra-driver")
    resources = ((release.values if release is not None else {}).get("resources")) or {}
    wanted = [("gpus", "gpus"), ("computeDomains", "compute-domains")]
    return [name for key, name in wanted if (resources.get(key) or {}).get("enabled", True)] or ["gpus"]


def _slices_of(world: World, group: Group, name: str) -> list[dict[str, Any]]:
    """The ResourceSlices node `name` publishes (or still shows, stale) in the model."""
    if group.slices == "none":
        return []
    pool = _pool(world, group)
    release = world.plan.platform.dra_driver.chart_version
    return list(_slices(name, pool.product, pool.gpus_per_node, release, group.slices_layout))


NodeObjects = tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]
_BUILT: dict[tuple[Any, ...], NodeObjects] = {}
_PLANS: dict[int, object] = {}


def node_objects(world: World, group: Group, name: str) -> NodeObjects:
    """The Node `name` of `group`, the pods the DaemonSets run on it and its ResourceSlices.

    Built once per state of the group (its labels, taints, operands, plugins, slices) and shared:
    the objects are never edited.
    """
    key = (
        name,
        group.pool,
        frozenset(group.labels.items()),
        tuple(tuple(sorted(t.items())) for t in group.taints),
        group.cordoned,
        frozenset(group.operands.items()),
        group.device_plugin_registered,
        group.kubelet_plugin,
        group.slices,
        group.mig_layout,
        group.published_layout,
        dra_chart_name(world) if group.kubelet_plugin != "absent" else "",
        tuple(_plugin_containers(world)) if group.kubelet_plugin != "absent" else (),
        id(world.plan),
    )
    if key not in _BUILT:
        if len(_BUILT) > 20000:
            _BUILT.clear()
            _PLANS.clear()
        _PLANS[id(world.plan)] = world.plan  # keeps the id from being reused while its entries live
        _BUILT[key] = (
            node_object(world, group, name),
            node_pods(world, group, name),
            _slices_of(world, group, name),
        )
    return _BUILT[key]


def summarised_slices(world: World, group: Group, name: str) -> list[dict[str, Any]]:
    """The node's ResourceSlices as the gate programs read them (devices summed up by kind)."""
    slices = node_objects(world, group, name)[2]
    if not slices:
        return []
    key = id(slices)
    if _SUMMARISED.get(key, (None,))[0] is not slices:
        if len(_SUMMARISED) > 20000:
            _SUMMARISED.clear()
        _SUMMARISED[key] = (slices, summarise(slices, "<simulated cluster>"))
    return _SUMMARISED[key][1]


_SUMMARISED: dict[int, tuple[object, list[dict[str, Any]]]] = {}


def device_list(world: World, group: Group, name: str) -> list[dict[str, Any]]:
    """The devices node `name` has (those its slices would publish), in order."""
    pool = _pool(world, group)
    return _devices(
        name,
        pool.product,
        pool.gpus_per_node,
        world.plan.platform.dra_driver.chart_version,
        group.mig_layout,
    )


@lru_cache(maxsize=4096)
def _devices(
    name: str, product: str, gpus: int, release: str, layout: tuple[str, ...]
) -> list[dict[str, Any]]:
    return [d for s in _slices(name, product, gpus, release, layout) for d in s["spec"]["devices"]]


@lru_cache(maxsize=4096)
def _slices(
    name: str, product: str, gpus: int, release: str, layout: tuple[str, ...]
) -> tuple[dict[str, Any], ...]:
    """Memoised: the same node publishes the same slices (none when the catalog cannot model it)."""
    try:
        return tuple(slices_for_node(name, product, gpus, driver_release=release, mig_layout=layout or None))
    except InputError:
        return ()
