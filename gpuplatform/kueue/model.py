"""Kueue: the ClusterQueues that admit the tenants' batch work, and their GPU quotas per pool.

Quotas are declared per pool in GPUs, never per resource: the renderer puts a pool's quota on
`nvidia.com/gpu` while the pool is legacy and on the Kueue logical resource (`resource`) once it is
DRA, so a queue's total is the same in every wave by construction, and rollback moves it back.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Annotated

from pydantic import AfterValidator, Field

from gpuplatform.labels import NVIDIA_RESOURCE_PREFIX
from gpuplatform.model.base import (
    DnsLabel,
    DnsSubdomain,
    ExtendedResourceName,
    FeatureGateName,
    LabelKey,
    NonNegativeInt32,
    Quantity,
    ReleaseNumber,
    SpecModel,
)
from gpuplatform.model.fields import Items, Refs
from gpuplatform.model.tenants import Tenant
from gpuplatform.versions import KUEUE_DEFAULT

__all__ = [
    "PODSET_LABEL",
    "QUEUED_KINDS",
    "QUEUE_LABEL",
    "WORKLOAD_ANNOTATION",
    "ClusterQueue",
    "Kueue",
    "kueue_reference_errors",
    "queue_errors",
]

Loc = tuple[int | str, ...]

QUEUED_KINDS = ("Job", "CronJob")
"""Spec workload kinds Kueue's batch/v1 Job integration suspends until admitted (a CronJob's Jobs)."""
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
"""The label that submits a Job to a LocalQueue (kubernetes-sigs/kueue v0.19.2 `pkg/constants`
`QueueLabel`); a CronJob's Jobs carry it from `spec.jobTemplate.metadata.labels`."""
WORKLOAD_ANNOTATION = "kueue.x-k8s.io/workload"
"""On the pod template of a Job Kueue admitted: its Workload (v0.19.2 `apis/kueue/v1beta2` `WorkloadAnnotation`)."""
PODSET_LABEL = "kueue.x-k8s.io/podset"
"""On the same template: the Workload's podSet it belongs to (v0.19.2 `pkg/constants` `PodSetLabel`)."""


class ClusterQueue(SpecModel):
    """A ClusterQueue, the tenants whose namespaces submit to it, and its GPU quota per pool."""

    name: DnsSubdomain
    """Name of the ClusterQueue."""
    cohort: DnsLabel | None = None
    """Cohort the queue borrows from and lends to (`spec.cohortName`)."""
    tenants: Refs[Tenant] = Field(min_length=1)
    """Tenants whose namespaces get a LocalQueue pointing at this ClusterQueue."""
    local_queue: DnsLabel | None = None
    """Name of the LocalQueue in each tenant namespace (the Jobs' `kueue.x-k8s.io/queue-name`);
    default: the ClusterQueue's name when it is a DNS label, else `gpu`."""
    quotas: dict[DnsLabel, NonNegativeInt32] = Field(min_length=1)
    """GPUs per node pool (`nominalQuota` of the pool's ResourceFlavor), on `nvidia.com/gpu` while
    the pool is legacy and on `kueue.resource` once it is DRA."""
    resources: dict[LabelKey, Quantity] = Field(default={}, max_length=16)
    """The queue's quotas of its other resources (`cpu`, `memory`, ...), as the team's ClusterQueue
    holds them (`init` reads them): the rendered queue replaces the team's, and Kueue admits no
    Job asking for a resource its queue does not cover. Rendered as one resource group on the
    flavor `any-node.<domain>` (no node labels)."""

    @property
    def local_queue_name(self) -> str:
        """The LocalQueue name in each tenant namespace."""
        if self.local_queue is not None:
            return self.local_queue
        return self.name if "." not in self.name else "gpu"

    @property
    def total(self) -> int:
        """The queue's GPUs, the same in every wave."""
        return sum(self.quotas.values())


def _logical(value: str) -> str:
    if value.startswith(NVIDIA_RESOURCE_PREFIX):
        raise ValueError(
            f"{value!r} is an extended resource the NVIDIA device plugin advertises: Kueue would count DRA "
            f"devices and device-plugin GPUs as one quota; name a resource of your own domain (<domain>/gpu)"
        )
    return value


#: Kueue's logical resource for DRA devices: an extended resource name no device plugin advertises.
LogicalResource = Annotated[ExtendedResourceName, AfterValidator(_logical)]


class Kueue(SpecModel):
    """The cluster's Kueue: its release, its DRA mapping and the GPU ClusterQueues.

    Kueue's Configuration (ConfigMap `kueue-manager-config`) belongs to whoever installs Kueue; the
    tool hands off the `resources.deviceClassMappings` entry and the feature gate it needs
    (`handoff/<wave>/kueue-configuration.yaml`).
    """

    version: ReleaseNumber = KUEUE_DEFAULT
    """Kueue release of the cluster (0.15+ for `kueue.x-k8s.io/v1beta2`, 0.14+ for DRA quotas)."""
    namespace: DnsLabel = "kueue-system"
    """Namespace of the Kueue controller and its Configuration."""
    resource: LogicalResource | None = None
    """Logical resource every tier class is mapped to (`deviceClassMappings[].name`), counted in
    devices; default `<domain>/gpu`. Never a resource the device plugin advertises (`nvidia.com/*`):
    Kueue would count claims and device-plugin GPUs as one quota."""
    mapped_tiers: tuple[DnsLabel, ...] | None = None
    """Tiers whose classes the Configuration maps to `resource`; default: every tier the wave serves.
    A Kueue configured elsewhere lists what its `deviceClassMappings` hold (GP403 checks the rest)."""
    feature_gates: dict[FeatureGateName, bool] = {}
    """The running Kueue's `featureGates` beyond its release's defaults."""
    cluster_queues: Items[ClusterQueue] = Field(min_length=1)
    """The GPU ClusterQueues."""

    def resource_name(self, domain: str) -> str:
        """The logical resource DRA devices are counted as."""
        return self.resource or f"{domain}/gpu"


def _need(loc: Loc, kind: str, name: str, known_names: Iterable[str]) -> Iterator[tuple[Loc, str]]:
    names = list(known_names)
    if name not in names:
        yield loc, f"{kind} {name!r} is not defined in spec.{kind}s (defined: {', '.join(names) or 'none'})"


def kueue_reference_errors(
    kueue: Kueue, pools: Iterable[str], tenants: Iterable[str], domain: str, bridged: Iterable[str] = ()
) -> list[tuple[Loc, str]]:
    """Pools and tenants a ClusterQueue names that the spec does not define, duplicates, other
    resources that are GPU resources, and a logical resource pods request as an extended resource
    (`bridged`: the bridge classes' `extendedResourceName`s)."""
    pools, tenants = list(pools), list(tenants)
    errors: list[tuple[Loc, str]] = []
    logical = kueue.resource_name(domain)
    if logical in set(bridged):
        errors.append(
            (
                ("spec", "kueue", "resource"),
                f"{logical!r} is the extended resource a bridge class serves: Kueue would count the pods that "
                "request it and the DRA devices as one quota; name a resource no pod requests",
            )
        )
    seen_queues: set[str] = set()
    seen_tenants: dict[str, str] = {}
    for i, queue in enumerate(kueue.cluster_queues):
        loc: Loc = ("spec", "kueue", "clusterQueues", i)
        if queue.name in seen_queues:
            errors.append(((*loc, "name"), f"ClusterQueue {queue.name!r} is declared twice"))
        seen_queues.add(queue.name)
        for j, tenant in enumerate(queue.tenants):
            errors += _need((*loc, "tenants", j), "tenant", tenant, tenants)
            other = seen_tenants.get(tenant)
            if other is not None:
                errors.append(
                    ((*loc, "tenants", j), f"tenant {tenant!r} already submits to ClusterQueue {other!r}")
                )
            seen_tenants[tenant] = queue.name
        for pool in queue.quotas:
            errors += _need((*loc, "quotas", pool), "nodePool", pool, pools)
        for name in queue.resources:
            if name == logical or name.startswith(NVIDIA_RESOURCE_PREFIX):
                errors.append(
                    (
                        (*loc, "resources", name),
                        f"{name!r} is a GPU resource: the queue's GPU quota is `quotas`, per pool",
                    )
                )
    return errors


def queue_errors(
    kueue: Kueue | None, tenants: dict[str, str], queues: Iterable[tuple[str, str | None]]
) -> list[tuple[Loc, str]]:
    """Workloads whose `queue` names no LocalQueue the spec renders in their namespace.

    `tenants` maps tenant name -> namespace; `queues` is (namespace, queue) per spec workload.
    """
    rendered: dict[str, list[str]] = {}
    for queue in kueue.cluster_queues if kueue is not None else ():
        for tenant in queue.tenants:
            if tenant in tenants:
                rendered.setdefault(tenants[tenant], []).append(queue.local_queue_name)
    errors: list[tuple[Loc, str]] = []
    for i, (namespace, name) in enumerate(queues):
        if name is None or name in rendered.get(namespace, []):
            continue
        have = rendered.get(namespace)
        where = (
            f"the LocalQueues of namespace {namespace} are {', '.join(have)}"
            if have
            else f"spec.kueue renders no LocalQueue in namespace {namespace}"
            + ("" if kueue is not None else " (no spec.kueue)")
        )
        errors.append(
            (
                ("spec", "workloads", i, "queue"),
                f"LocalQueue {name!r} is not rendered: {where}; Kueue would keep the Job suspended for good",
            )
        )
    return errors
