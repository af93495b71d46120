"""Tenant isolation by construction: the platform's own claims pass the policies it renders, quotas
never refuse what runs, GitOps identities cannot edit the guardrails, NIM caches stay per product."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml

from gpuplatform.evidence.register import gpu_count, spec_workloads, workload_rows
from gpuplatform.model.workloads import NimService, Workload
from gpuplatform.plan.waves import WaveState
from gpuplatform.policy.registry import Finding, RuleContext, rule
from gpuplatform.render.cluster_admission import OUTSIDE_TENANTS_POLICY, declared_namespaces
from gpuplatform.render.nim import nim_cache
from gpuplatform.render.quota import QUOTA_NAME, legacy_gpus, tenant_quota
from gpuplatform.render.tenants import tenant_of
from gpuplatform.snapshot.read import Snapshot

__all__ = ["running_gpus"]


def _moves(ctx: RuleContext) -> Iterator[tuple[str, str, str, str | None, WaveState]]:
    """(spec path, what, namespace, tier, state of its movesIn wave) of every workload and NIM service."""
    p = ctx.platform
    moving: list[tuple[str, str, Workload | NimService]] = [
        *((f"spec.workloads[{i}]", "workload", w) for i, w in enumerate(p.workloads)),
        *((f"spec.nimServices[{i}]", "NIM service", n) for i, n in enumerate(p.nim_services)),
    ]
    for loc, label, item in moving:
        yield (
            loc,
            f"{label} {item.namespace}/{item.name}",
            item.namespace,
            item.tier,
            ctx.plan.wave(item.moves_in),
        )


@rule(
    "GP260",
    "error",
    "a workload or NIM service moves into a namespace where claims are refused",
    f"""
From the wave that installs the DRA driver, `{OUTSIDE_TENANTS_POLICY}` refuses ResourceClaims and
templates in every namespace that is not an enabled tenant's, the platform's, or listed in
`tenantPolicy.allowNamespaces`. A workload or NIM service that moves to DRA in such a namespace
would have its claim template, and so its pods, refused.
""",
)
def move_into_undeclared_namespace(ctx: RuleContext) -> Iterator[Finding]:
    for loc, what, namespace, _, state in _moves(ctx):
        if namespace not in declared_namespaces(ctx.plan, state):
            yield Finding(
                f"{loc}.namespace",
                f"{what} moves in wave {state.name!r}, where namespace {namespace!r} is no enabled tenant's",
                "enable the namespace's tenant in that wave or earlier, or list the namespace in "
                "spec.tenantPolicy.allowNamespaces",
            )


@rule(
    "GP261",
    "error",
    "a claim template the platform renders would be refused by its tenant's policy",
    """
The tenant policy admits only the tenant's tiers, and of those only the ones published in the wave.
The claim template of a converted workload, of a NIM service (a NIM service without a tier asks for
the chart's `gpu.nvidia.com`) or of the tenant itself, for any other class, is refused in the
tenant's namespace, and the pods never start.
""",
)
def template_refused_by_tenant_policy(ctx: RuleContext) -> Iterator[Finding]:
    plan = ctx.plan
    enabled = {t: next(s for s in plan.waves if t in s.tenants) for s in plan.waves for t in s.tenants}
    for loc, what, namespace, tier, state in _moves(ctx):
        tenant = tenant_of(ctx.platform, namespace)
        if tenant is None:
            continue
        if tier is None or tier not in tenant.tiers:
            yield Finding(
                f"{loc}.tier",
                f"{what} asks for {f'tier {tier!r}' if tier else 'the chart class gpu.nvidia.com'}, "
                f"which tenant {tenant.name!r} may not use",
                f"use one of the tenant's tiers ({', '.join(tenant.tiers) or 'none'}) or add the tier to it",
            )
        elif tier not in state.tiers:
            yield Finding(
                f"{loc}.tier",
                f"{what} moves in wave {state.name!r}, before tier {tier!r} is published",
                "name the tier in that wave's tiers or an earlier one, or move later",
            )
    for i, tenant in enumerate(ctx.platform.tenants):
        first = enabled.get(tenant.name)
        for j, template in enumerate(tenant.claim_templates):
            if first is not None and template.tier in tenant.tiers and template.tier not in first.tiers:
                yield Finding(
                    f"spec.tenants[{i}].claimTemplates[{j}].tier",
                    f"tenant {tenant.name!r} is enabled in wave {first.name!r}, before tier {template.tier!r} is published",
                    "publish the tier in that wave or earlier, or enable the tenant later",
                )


@rule(
    "GP262",
    "error",
    "a tenant's GitOps identity is bound to cluster-admin",
    """
`tenants[].gitops.clusterRoles` are bound to the tenant's GitOps ServiceAccount inside its
namespace. `cluster-admin` there can rewrite the namespace's ResourceQuota and the platform's Roles
and RoleBindings: the tenant would set its own guardrails. `admin` or `edit` are enough to deploy.
""",
)
def gitops_cluster_admin(ctx: RuleContext) -> Iterator[Finding]:
    for i, tenant in enumerate(ctx.platform.tenants):
        for j, role in enumerate(tenant.gitops.cluster_roles):
            if role == "cluster-admin":
                yield Finding(
                    f"spec.tenants[{i}].gitops.clusterRoles[{j}]",
                    f"tenant {tenant.name!r} would bind cluster-admin to its GitOps identity",
                    "bind admin or edit instead",
                )


def _legacy_cache(text: str) -> str | None:
    for doc in yaml.safe_load_all(text):
        if isinstance(doc, dict) and doc.get("kind") == "NIMService":
            cache = ((doc.get("spec") or {}).get("storage") or {}).get("nimCache") or {}
            return str(cache["name"]) if isinstance(cache, dict) and "name" in cache else None
    return None


@rule(
    "GP263",
    "error",
    "blue/green NIM services share a NIMCache across GPU products",
    """
A NIM service moves blue/green: the new service runs on the DRA pools beside its predecessor on the
legacy pools. NIM engine profiles are built per GPU product, and an RWO cache volume mounts on one
node only, so the two may not share a NIMCache when the pools' products differ: name another cache
(`nimServices[].cache`; the default is the new service's name).
""",
)
def shared_nim_cache(ctx: RuleContext) -> Iterator[Finding]:
    plan, pools = ctx.plan, ctx.plan.pools
    for i, nim in enumerate(ctx.platform.nim_services):
        if nim.manifest is None or nim.manifest not in ctx.loaded.manifests:
            continue
        legacy_cache = _legacy_cache(ctx.loaded.manifests[nim.manifest])
        state = plan.wave(nim.moves_in)
        before = plan.waves[max(state.index - 1, 0)]
        legacy = {pools[n].product for n in before.legacy_pools}
        dra = {pools[n].product for n in state.dra_pools}
        if legacy_cache == nim_cache(nim) and legacy and dra and legacy != dra:
            yield Finding(
                f"spec.nimServices[{i}].cache",
                f"NIM service {nim.namespace}/{nim.name} and {nim.replaces or 'its predecessor'} both mount "
                f"NIMCache {legacy_cache!r} across {', '.join(sorted(legacy))} and {', '.join(sorted(dra))}",
                "set nimServices[].cache to a NIMCache built for the DRA pools' product",
            )


def running_gpus(snapshot: Snapshot) -> dict[str, dict[str, int]]:
    """`nvidia.com/gpu` of the pods that count against quota (not finished), by namespace and workload."""
    pods = [
        p
        for p in snapshot.items("pods") or []
        if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
    ]
    live = Snapshot(snapshot.folder, snapshot.every_kind() | {"pods": pods}, snapshot.nvidia_smi)
    found: dict[str, dict[str, int]] = {}
    for row in workload_rows(live):
        if row.gpus:
            found.setdefault(row.namespace, {})[f"{row.kind}/{row.name}"] = row.gpus * row.pods
    return found


def _quota_findings(
    ctx: RuleContext, state: WaveState
) -> Iterator[tuple[int, Any, int, int, dict[str, int]]]:
    if ctx.snapshot is None or ctx.snapshot.items("pods") is None:
        return
    running = running_gpus(ctx.snapshot)
    for i, tenant in enumerate(ctx.platform.tenants):
        if tenant.name not in state.tenants or tenant.ns not in running:
            continue
        hard = int(tenant_quota(ctx.plan, state, tenant)["spec"]["hard"]["requests.nvidia.com/gpu"])
        used = running[tenant.ns]
        if sum(used.values()) > hard:
            yield i, tenant, hard, sum(used.values()), used


def _undeclared(ctx: RuleContext, namespace: str, used: dict[str, int]) -> list[str]:
    """Running workloads (`Kind/name`) the spec does not declare, a NIM service as its Deployment."""
    declared = {f"{kind}/{name}" for ns, kind, name in spec_workloads(ctx.platform) if ns == namespace}
    return sorted(w for w in used if w not in declared)


@rule(
    "GP264",
    "error",
    "the active wave's quota refuses workloads that run now (check --snapshot)",
    f"""
`{QUOTA_NAME}` limits `requests.nvidia.com/gpu` in a tenant namespace. When the pods running there
(from the snapshot) ask for more, every restart, rollout or scale of a device-plugin workload is
refused, and so is a rollback to the legacy path. Declare the workloads in `spec.workloads` (the
quota covers them until they move, with `quota.legacyWorkloads`), or raise `quota.gpus`.
""",
)
def active_quota_refuses(ctx: RuleContext) -> Iterator[Finding]:
    state = ctx.plan.active
    for i, tenant, hard, used, by_workload in _quota_findings(ctx, state):
        yield Finding(
            f"spec.tenants[{i}].quota",
            f"wave {state.name!r}: {QUOTA_NAME} in {tenant.ns} allows {hard} nvidia.com/gpu but {used} run there "
            f"({', '.join(f'{w}: {n}' for w, n in sorted(by_workload.items()))})",
            _cover(ctx, tenant.ns, by_workload, used, opted_in=tenant.quota.legacy_workloads),
        )


def _cover(ctx: RuleContext, namespace: str, used: dict[str, int], total: int, *, opted_in: bool) -> str:
    """How the quota comes to cover what runs: declare what the spec lacks, or move what it declares."""
    raise_it = f"raise quota.gpus to {total}"
    if undeclared := _undeclared(ctx, namespace, used):
        return f"declare {', '.join(undeclared)} in spec.workloads" + (
            "" if opted_in else f" with quota.legacyWorkloads: true, or {raise_it}"
        )
    if not opted_in:
        return f"set quota.legacyWorkloads: true (it covers them until they move), or {raise_it}"
    return f"they are in spec.workloads, past the wave after their move: move them to claims, or {raise_it}"


@rule(
    "GP265",
    "warning",
    "the next wave's quota would refuse workloads that run now (check --snapshot)",
    """
As GP264, for the wave after the active one: advancing would leave running device-plugin
workloads unable to restart unless they move first.
""",
)
def next_quota_refuses(ctx: RuleContext) -> Iterator[Finding]:
    active = ctx.plan.active
    if active.index + 1 >= len(ctx.plan.waves):
        return
    state = ctx.plan.waves[active.index + 1]
    for i, tenant, hard, used, by_workload in _quota_findings(ctx, state):
        yield Finding(
            f"spec.tenants[{i}].quota",
            f"wave {state.name!r}: {QUOTA_NAME} in {tenant.ns} would allow {hard} nvidia.com/gpu but {used} run "
            f"there ({', '.join(f'{w}: {n}' for w, n in sorted(by_workload.items()))})",
            "move them before advancing, or declare them in spec.workloads with a later movesIn",
        )


def _legacy_needs(ctx: RuleContext) -> Iterator[tuple[int, Any, WaveState, dict[str, int]]]:
    """(index, tenant, wave, GPUs by workload) wherever declared device-plugin workloads run in an
    enabled tenant's namespace."""
    for state in ctx.plan.waves:
        for i, tenant in enumerate(ctx.platform.tenants):
            if tenant.name in state.tenants and (needs := legacy_gpus(ctx.plan, state, tenant.ns)):
                yield i, tenant, state, needs


@rule(
    "GP267",
    "warning",
    "declared device-plugin workloads need more nvidia.com/gpu than the tenant's quota.gpus",
    f"""
`{QUOTA_NAME}` limits `requests.nvidia.com/gpu` to `quota.gpus`, as typed. When the workloads the
spec declares in the namespace (`workloads[]`, replaced NIM services; with a Deployment's rollout
surge) need more before they move, their rollouts and a rollback to the legacy path are refused.
Raise `quota.gpus`, or set `quota.legacyWorkloads: true` to have their GPUs added until they move.
""",
)
def legacy_need_above_quota(ctx: RuleContext) -> Iterator[Finding]:
    for i, tenant, state, needs in _legacy_needs(ctx):
        if not tenant.quota.legacy_workloads and sum(needs.values()) > tenant.quota.gpus:
            yield Finding(
                f"spec.tenants[{i}].quota.gpus",
                f"wave {state.name!r}: {tenant.ns} declares device-plugin workloads needing "
                f"{sum(needs.values())} nvidia.com/gpu ({', '.join(f'{w}: {n}' for w, n in sorted(needs.items()))})"
                f" but quota.gpus is {tenant.quota.gpus}",
                f"raise quota.gpus to {sum(needs.values())} or set quota.legacyWorkloads: true",
            )


@rule(
    "GP268",
    "info",
    "quota.legacyWorkloads adds the GPUs of device-plugin workloads to requests.nvidia.com/gpu",
    f"""
With `quota.legacyWorkloads: true`, `{QUOTA_NAME}` allows `quota.gpus` plus the GPUs of the
namespace's declared device-plugin workloads, in every wave up to the one after their move. This
note says, per wave, what is added and for which workloads.
""",
)
def legacy_quota_added(ctx: RuleContext) -> Iterator[Finding]:
    for i, tenant, state, needs in _legacy_needs(ctx):
        if tenant.quota.legacy_workloads:
            yield Finding(
                f"spec.tenants[{i}].quota.legacyWorkloads",
                f"wave {state.name!r}: requests.nvidia.com/gpu in {tenant.ns} is quota.gpus "
                f"{tenant.quota.gpus} + {sum(needs.values())} for device-plugin workloads until they move "
                f"({', '.join(f'{w}: {n}' for w, n in sorted(needs.items()))})",
            )


def _manifest_pods(text: str, kind: str, name: str) -> tuple[int, int] | None:
    """(GPUs per pod, pods) of workload `kind/name` in a manifest; None when it is not there."""
    for doc in yaml.safe_load_all(text):
        if (
            not isinstance(doc, dict)
            or doc.get("kind") != kind
            or (doc.get("metadata") or {}).get("name") != name
        ):
            continue
        spec = doc.get("spec") or {}
        if kind == "CronJob":
            spec = ((spec.get("jobTemplate") or {}).get("spec")) or {}
        pods = spec.get("parallelism" if kind in ("Job", "CronJob") else "replicas", 1)
        template = spec if kind == "Pod" else (spec.get("template") or {}).get("spec") or {}
        return gpu_count({"spec": template}), pods if isinstance(pods, int) else 1
    return None


@rule(
    "GP266",
    "warning",
    "a workload's manifest asks for other GPUs or replicas than the spec says",
    """
The legacy quota of a namespace is sized from `workloads[].gpus` (per pod) and `replicas`. When the
workload's manifest asks for more, the quota is too small for it while it still runs on the device
plugin: restarts and rollouts are refused. Keep the spec in step with the manifest.
""",
)
def manifest_disagrees(ctx: RuleContext) -> Iterator[Finding]:
    for i, w in enumerate(ctx.platform.workloads):
        if w.manifest is None or w.manifest not in ctx.loaded.manifests or w.kind == "DaemonSet":
            continue
        found = _manifest_pods(ctx.loaded.manifests[w.manifest], w.kind, w.name)
        if found is None:
            continue
        gpus, pods = found
        for field, spec_value, manifest_value in (("gpus", w.gpus, gpus), ("replicas", w.replicas, pods)):
            if spec_value < manifest_value:
                yield Finding(
                    f"spec.workloads[{i}].{field}",
                    f"workload {w.namespace}/{w.name}: {field} is {spec_value}, {w.manifest} has {manifest_value}",
                    f"set {field}: {manifest_value}",
                )
