"""What `gpuplatform plan` prints: per wave, what exists and what changed from the wave before."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpuplatform.kueue.plan import wave_quotas
from gpuplatform.plan.waves import Plan, WaveState

__all__ = ["plan_report", "plan_text", "wave_changes"]


def _templates(plan: Plan, state: WaveState) -> list[str]:
    return [
        f"{t.ns}/{c.name}"
        for t in plan.platform.tenants
        if t.name in state.tenants
        for c in t.claim_templates
    ]


def _classes(plan: Plan, state: WaveState) -> list[str]:
    p = plan.platform
    bridges = {b.name: b for b in p.bridges}
    names = [p.class_name(t) for t in state.tiers]
    names += [
        p.class_name(b) if bridges[b].source == "platform" else "gpu.nvidia.com (chart)"
        for b in state.bridges
    ]
    return names


def wave_changes(plan: Plan, prev: WaveState | None, cur: WaveState) -> list[str]:
    """Human-readable changes from `prev` to `cur` (everything, for the first wave)."""
    changes: list[str] = []
    for pool, mode in cur.pool_modes.items():
        source = plan.pools[pool].takes_over_from
        was, now = prev is not None and prev.present(pool), cur.present(pool)
        owner = plan.pools[pool].provisioner
        if source is not None and owner is not None and was != now:
            changes.append(
                f"pool {pool}: new group on dra, {owner.min_nodes} node(s) taken from {source}"
                if now
                else f"pool {pool}: group deleted, its {owner.min_nodes} node(s) given back to {source}"
            )
            continue
        if not now:
            continue
        before = prev.pool_modes[pool] if prev else None
        if before != mode:
            changes.append(f"pool {pool}: {before or 'new'} -> {mode}")
    if (prev.driver_installed if prev else False) != cur.driver_installed:
        changes.append("DRA driver " + ("installed" if cur.driver_installed else "removed"))
        if cur.driver_installed and plan.chart_bridge_live:
            changes.append(
                "the chart's gpu.nvidia.com class is rendered without extendedResourceName "
                "until a wave names it as the bridge (source: chart)"
            )
    if (prev.device_plugin_enabled if prev else True) != cur.device_plugin_enabled:
        changes.append(
            "GPU Operator device plugin " + ("enabled" if cur.device_plugin_enabled else "disabled")
        )
    for what, before_list, after_list in (
        ("class", _classes(plan, prev) if prev else [], _classes(plan, cur)),
        ("tenant", list(prev.tenants) if prev else [], list(cur.tenants)),
        ("claim template", _templates(plan, prev) if prev else [], _templates(plan, cur)),
        ("NIM service", list(prev.nim_services) if prev else [], list(cur.nim_services)),
    ):
        changes += [f"+ {what} {n}" for n in after_list if n not in before_list]
        changes += [f"- {what} {n}" for n in before_list if n not in after_list]
    moved = [plan.platform.workloads[i] for i in cur.workloads if not prev or i not in prev.workloads]
    changes += [f"+ workload {w.kind}/{w.namespace}/{w.name} converted to claims" for w in moved]
    if (prev.validation if prev else False) != cur.validation:
        changes.append(("+" if cur.validation else "-") + " validation workload")
    if cur.drains:
        nxt = plan.waves[cur.index + 1].name
        changes.append(
            f"drain pool(s) {', '.join(cur.drains)}: wave {nxt} moves them between allocators, so no GPU "
            "workload of the allocator they leave may stay on their nodes"
        )
    return changes


def plan_report(plan: Plan, quota_notes: Mapping[str, list[str]] | None = None) -> dict[str, Any]:
    """The plan as data (`--format json`); `quota_notes` by wave name (`render.quota.quota_notes`)."""
    waves = []
    prev: WaveState | None = None
    for state in plan.waves:
        entry: dict[str, Any] = {
            "wave": state.name,
            "directory": state.dir_name,
            "stage": state.wave.stage,
            "active": state.name == plan.platform.active_wave,
            "legacyPools": list(state.legacy_pools),
            "draPools": list(state.dra_pools),
            "driverInstalled": state.driver_installed,
            "devicePluginEnabled": state.device_plugin_enabled,
            "deviceClasses": _classes(plan, state),
            "tenants": list(state.tenants),
            "claimTemplates": _templates(plan, state),
            "drains": list(state.drains),
            "changes": wave_changes(plan, prev, state),
            "quotaNotes": (quota_notes or {}).get(state.name, []),
        }
        if plan.platform.kueue is not None:
            entry["kueueQuotas"] = wave_quotas(plan.platform, state)
        waves.append(entry)
        prev = state
    return {"platform": plan.platform.name, "activeWave": plan.platform.active_wave, "waves": waves}


def plan_text(report: dict[str, Any]) -> str:
    """The plan as a terminal page."""
    lines = [f"platform {report['platform']} (active wave: {report['activeWave']})"]
    for w in report["waves"]:
        marker = "  <- active" if w["active"] else ""
        lines.append(f"\n{w['directory']}  [{w['stage']}]{marker}")
        lines.append(f"  legacy pools:    {', '.join(w['legacyPools']) or '-'}")
        lines.append(f"  DRA pools:       {', '.join(w['draPools']) or '-'}")
        lines.append(f"  device classes:  {', '.join(w['deviceClasses']) or '-'}")
        lines.append(f"  tenants:         {', '.join(w['tenants']) or '-'}")
        lines.append(f"  claim templates: {', '.join(w['claimTemplates']) or '-'}")
        for queue, quotas in (w.get("kueueQuotas") or {}).items():
            held = ", ".join(f"{gpus} {resource}" for resource, gpus in quotas.items())
            lines.append(f"  kueue {queue}: {held} (total {sum(quotas.values())})")
        if w["drains"]:
            lines.append(f"  drains:          {', '.join(w['drains'])}")
        if w["quotaNotes"]:
            lines.append("  quota:")
            lines += [f"    {n}" for n in w["quotaNotes"]]
        lines.append("  changes:")
        lines += [f"    {c}" for c in w["changes"]] or ["    (none)"]
    return "\n".join(lines)
