"""Kueue admission across the waves: a release that counts DRA devices, quotas that move with the
pools without growing or vanishing, and converted Jobs their LocalQueue can admit (docs/kueue.md)."""

from __future__ import annotations

from collections.abc import Iterator

from gpuplatform.kueue.model import Kueue
from gpuplatform.kueue.plan import queue_quotas, workload_queue
from gpuplatform.kueue.render import kueue_configuration_handoff, render_kueue
from gpuplatform.labels import GPU_RESOURCE
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.policy.registry import Finding, RuleContext, rule
from gpuplatform.versions import (
    KUEUE_DRA_GATE_DEFAULT_ON_SINCE,
    KUEUE_V1BETA2_SINCE,
    kueue_dra_gate,
    parse_release,
)

__all__ = ["rendered_quota_totals"]


def _kueue(ctx: RuleContext) -> Kueue | None:
    return ctx.platform.kueue


@rule(
    "GP400",
    "error",
    "the Kueue release cannot count DRA devices against the rendered ClusterQueues",
    """
Kueue counts a Workload's ResourceClaims against a ClusterQueue only through its Configuration's
`resources.deviceClassMappings`, added in v0.14.0 behind the `DynamicResourceAllocation` gate
(kubernetes-sigs/kueue v0.14.0 pkg/features/kube_features.go), and the tool renders
`kueue.x-k8s.io/v1beta2` objects, served from v0.15.0. An older Kueue leaves every converted Job
suspended (or refuses the objects). Upgrade Kueue to 0.15 or newer before the first pool moves.
""",
)
def kueue_release(ctx: RuleContext) -> Iterator[Finding]:
    kueue = _kueue(ctx)
    if kueue is not None and parse_release(kueue.version) < KUEUE_V1BETA2_SINCE:
        yield Finding(
            "spec.kueue.version",
            f"Kueue {kueue.version} cannot count DRA devices in kueue.x-k8s.io/v1beta2 ClusterQueues",
            f"upgrade Kueue to {KUEUE_V1BETA2_SINCE} or newer (KueueDRAIntegration is on by default from "
            f"{KUEUE_DRA_GATE_DEFAULT_ON_SINCE})",
        )


@rule(
    "GP401",
    "error",
    "Kueue's DRA feature gate is off, or set where the release refuses it",
    """
Before v0.18.0 Kueue's DRA accounting is the alpha gate `DynamicResourceAllocation`, off by default;
from v0.18.0 it is `KueueDRAIntegration` (beta, on) and `DynamicResourceAllocation` is deprecated and
locked to false, so setting it true stops Kueue from starting (kubernetes-sigs/kueue v0.18.0
pkg/features/kube_features.go). `kueue.featureGates` records the running Kueue's gates: the DRA gate
of the release must not be off, and the locked one must not be set.
""",
)
def kueue_gate(ctx: RuleContext) -> Iterator[Finding]:
    kueue = _kueue(ctx)
    if kueue is None:
        return
    release = parse_release(kueue.version)
    gate, _ = kueue_dra_gate(release)
    if kueue.feature_gates.get(gate) is False:
        yield Finding(
            f"spec.kueue.featureGates.{gate}",
            f"Kueue {kueue.version} counts no DRA device with {gate} off: every converted Job stays suspended",
            f"switch {gate} on (the hand-off handoff/<wave>/kueue-configuration.yaml names it)",
        )
    locked = "DynamicResourceAllocation"
    if release >= KUEUE_DRA_GATE_DEFAULT_ON_SINCE and locked in kueue.feature_gates:
        yield Finding(
            f"spec.kueue.featureGates.{locked}",
            f"Kueue {kueue.version} locks {locked} to false: the controller refuses to start with it set",
            "remove it: KueueDRAIntegration is on by default",
        )


@rule(
    "GP402",
    "error",
    "a converted Job's LocalQueue cannot admit what it now asks for",
    """
A Job converted to ResourceClaims asks Kueue for the logical resource its DeviceClass is mapped to,
no longer for `nvidia.com/gpu`. It is admitted only if the ClusterQueue of the LocalQueue it is
submitted to (the workload's `queue`, its `kueue.x-k8s.io/queue-name`) has that much quota
on a DRA pool's flavor in the wave; otherwise it stays suspended for good (a `workload-disrupted`
outcome). Convert the Job in a wave after enough of the queue's pools have moved, or move more
quota (`kueue.clusterQueues[].quotas`) onto pools that are DRA by then.
""",
)
def converted_job_admitted(ctx: RuleContext) -> Iterator[Finding]:
    kueue = _kueue(ctx)
    if kueue is None:
        return
    p = ctx.platform
    resource = kueue.resource_name(p.domain)
    for state in ctx.plan.waves:
        for i in state.workloads:
            w = p.workloads[i]
            queue = workload_queue(p, w)
            if queue is None or not w.replicas:  # replicas 0: no pod waits for admission
                continue
            have = queue_quotas(p, kueue, queue, state).get(resource, 0)
            need = w.gpus
            if have < need:
                yield Finding(
                    f"spec.workloads[{i}]",
                    f"wave {state.name}: {w.kind} {w.namespace}/{w.name} asks for {need} {resource} but "
                    f"ClusterQueue {queue.name} (LocalQueue {w.queue}) has {have} on DRA pools: it stays suspended",
                    "convert it after enough of the queue's pools have moved, or move quota onto DRA pools",
                )


def _mapped_classes(plan: Plan, state: WaveState) -> set[str]:
    handoff = kueue_configuration_handoff(plan, state)
    if handoff is None:
        return set()
    mappings = handoff["spec"]["resources"]["deviceClassMappings"]
    return {c for m in mappings for c in m["deviceClassNames"]}


@rule(
    "GP403",
    "error",
    "a tier class a queued tenant can use is not mapped in Kueue's Configuration",
    """
Kueue marks a Workload inadmissible when one of its claims names a DeviceClass no
`deviceClassMappings` entry lists (kubernetes-sigs/kueue v0.19.2 pkg/dra/claims.go: "DeviceClass %s is
not mapped in DRA configuration"). Every class a tenant of a ClusterQueue can claim in a wave must be
in the wave's Configuration hand-off.
""",
)
def class_mapped(ctx: RuleContext) -> Iterator[Finding]:
    kueue = _kueue(ctx)
    if kueue is None:
        return
    p = ctx.platform
    queued = {t for q in kueue.cluster_queues for t in q.tenants}
    for state in ctx.plan.waves:
        mapped = _mapped_classes(ctx.plan, state)
        for i, tenant in enumerate(p.tenants):
            if tenant.name not in queued or tenant.name not in state.tenants:
                continue
            for tier in tenant.tiers:
                if tier in state.tiers and p.class_name(tier) not in mapped:
                    yield Finding(
                        f"spec.tenants[{i}].tiers",
                        f"wave {state.name}: class {p.class_name(tier)} of tenant {tenant.name} is not mapped",
                        "map it in the Kueue Configuration (resources.deviceClassMappings)",
                    )


def rendered_quota_totals(plan: Plan, state: WaveState) -> dict[str, int]:
    """GPUs each rendered ClusterQueue of `state` admits, over every resource group and flavor (its
    other resources, cpu or memory, are not GPUs)."""
    totals: dict[str, int] = {}
    kueue = plan.platform.kueue
    gpus = {GPU_RESOURCE, kueue.resource_name(plan.platform.domain)} if kueue is not None else set()
    for obj in render_kueue(plan, state):
        if obj["kind"] != "ClusterQueue":
            continue
        quota = sum(
            int(r["nominalQuota"])
            for group in obj["spec"]["resourceGroups"]
            for flavor in group["flavors"]
            for r in flavor["resources"]
            if r["name"] in gpus
        )
        totals[obj["metadata"]["name"]] = quota
    return totals


@rule(
    "GP404",
    "error",
    "a ClusterQueue's GPU total changes during the migration",
    """
While a pool moves, its quota must leave `nvidia.com/gpu` and reach the Kueue logical resource in
the same wave: both live over-admits (the queue admits more Jobs than it has GPUs), neither
suspends the pool's share. The rule sums the nominal quotas of every rendered ClusterQueue in every
wave and refuses a wave whose total differs from the queue's declared total.
""",
)
def quota_total_constant(ctx: RuleContext) -> Iterator[Finding]:
    kueue = _kueue(ctx)
    if kueue is None:
        return
    for state in ctx.plan.waves:
        totals = rendered_quota_totals(ctx.plan, state)
        for i, queue in enumerate(kueue.cluster_queues):
            got = totals.get(queue.name, 0)
            if got != queue.total:
                word = "over-admits" if got > queue.total else "suspends"
                yield Finding(
                    f"spec.kueue.clusterQueues[{i}].quotas",
                    f"wave {state.name}: ClusterQueue {queue.name} admits {got} GPUs, not {queue.total}: it {word}",
                    "give each pool its quota on exactly one resource per wave",
                )


@rule(
    "GP405",
    "warning",
    "the Kueue quotas on a pool exceed its GPUs",
    """
A flavor's nominal quotas, summed over every ClusterQueue, are what Kueue may admit onto the pool;
more than the pool's GPUs (nodes times `gpusPerNode`; `maxNodes` for a provisioner pool, less the
nodes it gives to new groups in any wave) admits Jobs
that then wait unschedulable, which looks like a migration fault in the middle of a wave.
""",
)
def pool_quota_fits(ctx: RuleContext) -> Iterator[Finding]:
    kueue = _kueue(ctx)
    if kueue is None:
        return
    for i, pool in enumerate(ctx.platform.node_pools):
        # the fewest the pool has in any wave: a group that gave nodes to a new one has fewer after
        shapes = [ctx.plan.pool_in(s, pool.name) for s in ctx.plan.waves if s.present(pool.name)]
        bounds = [len(p.nodes) if p.provisioner is None else p.provisioner.max_nodes for p in shapes]
        nodes = min((b for b in bounds if b is not None), default=None)
        quota = sum(q.quotas.get(pool.name, 0) for q in kueue.cluster_queues)
        if nodes is None or quota == 0:
            continue
        gpus = nodes * pool.gpus_per_node
        if quota > gpus:
            yield Finding(
                f"spec.nodePools[{i}]",
                f"ClusterQueues hold {quota} GPUs of pool {pool.name}, which has {gpus}",
                "lower the quotas or let the queues share through a cohort",
            )
