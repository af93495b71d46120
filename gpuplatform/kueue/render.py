"""Kueue objects per wave: a ResourceFlavor per pool, the GPU ClusterQueues with each pool's quota on
the resource its allocator serves, a LocalQueue per tenant namespace, and the Configuration hand-off.

Facts from kubernetes-sigs/kueue v0.19.2: a ClusterQueue's resource group lists `coveredResources`
and at least one flavor, each flavor naming a quota for every covered resource
(config/components/crd/bases/kueue.x-k8s.io_clusterqueues.yaml, v1beta2 `resourceGroups`); a
ResourceFlavor's `nodeLabels` are added to an admitted pod's node selector and its `tolerations` to its
tolerations (apis/kueue/v1beta2/resourceflavor_types.go); a Workload's claims are counted per
DeviceClass (`exactly.count`, pkg/dra/claims.go `countDevicesPerClass`) and turned into the logical
resource its Configuration maps the class to, an unmapped class making the Workload inadmissible
(`GetResourceRequestsForResourceClaimTemplates`). A Workload asking for a resource its ClusterQueue
does not cover is not admitted ("resource cpu unavailable in ClusterQueue"), so the rendered queue keeps
the team's other resources (`ClusterQueue.resources`) in a resource group of their own, on a flavor
no GPU group names.
"""

from __future__ import annotations

from gpuplatform.gates.nodes import pool_selector
from gpuplatform.kueue.model import QUEUE_LABEL, QUEUED_KINDS, ClusterQueue, Kueue
from gpuplatform.kueue.plan import pool_resource
from gpuplatform.labels import GPU_RESOURCE
from gpuplatform.model.nodes import NodePool
from gpuplatform.model.platform import Platform
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.meta import Obj, k8s_object, order_keys
from gpuplatform.render.nodes import pool_taint
from gpuplatform.versions import KUEUE_API_VERSION, kueue_dra_gate, parse_release

__all__ = [
    "QUEUED_KINDS",
    "QUEUE_LABEL",
    "flavor_labels",
    "flavor_name",
    "kueue_configuration_handoff",
    "kueue_facts",
    "render_kueue",
    "render_kueue_handoffs",
]


def flavor_name(platform: Platform, pool: NodePool) -> str:
    """The ResourceFlavor of a pool: `<pool>.<domain>`."""
    return f"{pool.name}.{platform.domain}"


def _any_node(platform: Platform) -> str:
    """The flavor of the queues' other resources: no node labels, so it constrains no pod."""
    return f"any-node.{platform.domain}"


def flavor_labels(platform: Platform, pool: NodePool, mode: str) -> dict[str, str]:
    """The node labels of the pool's flavor: only labels its nodes carry before the flavor is applied.

    The pool's own labels (a provisioner's), and the mode label where the forward path sets it first:
    a static pool's in every wave (`10-nodes` syncs before `40-tenants`), a provisioner pool's once it
    is DRA (the runbook applies the hand-off, or creates the group, before the merge). A provisioner
    pool that was never moved has never been given `mode=legacy` (only a rollback's hand-off sets it),
    and an admitted Job would stay Pending on a label no node has.
    """
    labels = dict(pool_selector(pool).labels)
    if pool.provisioner is None or mode == "dra":
        labels[platform.mode_label_key] = mode
    return dict(sorted(labels.items()))


def _flavor(platform: Platform, pool: NodePool, state: WaveState) -> Obj:
    mode = state.pool_modes[pool.name]
    spec: Obj = {"nodeLabels": flavor_labels(platform, pool, mode)}
    if mode == "dra":
        taint = pool_taint(platform, pool)
        spec["tolerations"] = [{"operator": "Equal", **taint}]
    return k8s_object(
        KUEUE_API_VERSION, "ResourceFlavor", flavor_name(platform, pool), wave=state.name, spec=spec
    )


def _cluster_queue(platform: Platform, kueue: Kueue, queue: ClusterQueue, state: WaveState) -> Obj:
    pools = {p.name: p for p in platform.node_pools}
    groups: dict[str, list[Obj]] = {}
    for pool, gpus in queue.quotas.items():
        resource = pool_resource(platform, kueue, state, pool)
        flavor = {
            "name": flavor_name(platform, pools[pool]),
            "resources": [{"name": resource, "nominalQuota": gpus}],
        }
        groups.setdefault(resource, []).append(flavor)
    namespaces = sorted({t.ns for t in platform.tenants if t.name in queue.tenants})
    spec: Obj = {}
    if queue.cohort is not None:
        spec["cohortName"] = queue.cohort
    spec["namespaceSelector"] = {
        "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": namespaces}]
    }
    spec["resourceGroups"] = [
        {"coveredResources": [resource], "flavors": sorted(flavors, key=lambda f: f["name"])}
        for resource, flavors in sorted(groups.items(), key=lambda g: g[0] != GPU_RESOURCE)
    ]
    if queue.resources:
        names = sorted(queue.resources)
        spec["resourceGroups"].append(
            {
                "coveredResources": names,
                "flavors": [
                    {
                        "name": _any_node(platform),
                        "resources": [{"name": n, "nominalQuota": queue.resources[n]} for n in names],
                    }
                ],
            }
        )
    return k8s_object(KUEUE_API_VERSION, "ClusterQueue", queue.name, wave=state.name, spec=spec)


def render_kueue(plan: Plan, state: WaveState) -> list[Obj]:
    """The wave's ResourceFlavors, ClusterQueues and LocalQueues (nothing without `spec.kueue`)."""
    p = plan.platform
    kueue = p.kueue
    if kueue is None:
        return []
    used = {pool for queue in kueue.cluster_queues for pool in queue.quotas}
    objects = [_flavor(p, pool, state) for pool in p.node_pools if pool.name in used]
    if any(queue.resources for queue in kueue.cluster_queues):
        objects.append(
            k8s_object(KUEUE_API_VERSION, "ResourceFlavor", _any_node(p), wave=state.name, spec={})
        )
    tenants = {t.name: t for t in p.tenants}
    for queue in kueue.cluster_queues:
        objects.append(_cluster_queue(p, kueue, queue, state))
        for name in queue.tenants:  # every wave: the namespace's legacy Jobs are queued from the start
            objects.append(
                k8s_object(
                    KUEUE_API_VERSION,
                    "LocalQueue",
                    queue.local_queue_name,
                    wave=state.name,
                    namespace=tenants[name].ns,
                    spec={"clusterQueue": queue.name},
                )
            )
    return objects


def kueue_configuration_handoff(plan: Plan, state: WaveState) -> Obj | None:
    """What the owner of Kueue's Configuration sets in `state`: the DRA gate and one device-class
    mapping of every tier class the wave serves to the logical resource the ClusterQueues cover."""
    p = plan.platform
    kueue = p.kueue
    if kueue is None or not state.tiers:
        return None
    tiers = [t for t in state.tiers if kueue.mapped_tiers is None or t in kueue.mapped_tiers]
    if not tiers:
        return None
    gate, _ = kueue_dra_gate(parse_release(kueue.version))
    mapping = {
        "name": kueue.resource_name(p.domain),
        "deviceClassNames": sorted(p.class_name(t) for t in tiers),
    }
    return order_keys(
        {
            "apiVersion": "gpuplatform.dev/v1alpha1",
            "kind": "KueueConfigurationHandoff",
            "metadata": {"name": "kueue-configuration", "namespace": kueue.namespace},
            "spec": {
                "wave": state.name,
                "configMap": "kueue-manager-config",
                "featureGates": {gate: True},
                "resources": {"deviceClassMappings": [mapping]},
            },
        }
    )


def render_kueue_handoffs(plan: Plan, state: WaveState) -> list[Obj]:
    """The Configuration hand-off of the wave, if Kueue is declared and the wave serves a tier."""
    handoff = kueue_configuration_handoff(plan, state)
    return [] if handoff is None else [handoff]


def kueue_facts(plan: Plan, state: WaveState) -> dict[str, object]:
    """What the `kueue-admission` evidence judges by: the migrated namespaces (those of a queue with a
    DRA pool in the wave) and their ClusterQueue, and the GPU resources a flavor must cover."""
    p = plan.platform
    kueue = p.kueue
    if kueue is None:
        return {"namespaces": {}, "gpuResources": []}
    tenants = {t.name: t.ns for t in p.tenants}
    namespaces = {
        tenants[name]: queue.name
        for queue in kueue.cluster_queues
        if any(state.pool_modes[pool] == "dra" for pool in queue.quotas)
        for name in queue.tenants
    }
    return {
        "namespaces": dict(sorted(namespaces.items())),
        "gpuResources": [GPU_RESOURCE, kueue.resource_name(p.domain)],
        "resource": kueue.resource_name(p.domain),
    }
