"""`README.md` of a platform's tree: the migration at a glance, for reviewers and on-call.

What the platform is, the active wave, what the next wave changes, how to advance or roll back,
the picture of `overview_mermaid`, and a table of the waves (gates, runbook, folder) and of the
pools (which wave moves each to DRA). Every link is relative to the platform's folder.
"""

from __future__ import annotations

from gpuplatform.gates import gates_for_wave
from gpuplatform.plan.report import wave_changes
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.markdown import markdown_text
from gpuplatform.render.overview_mermaid import mermaid_block

__all__ = ["OVERVIEW_FILE", "render_overview"]

#: Where the overview goes in the platform's tree.
OVERVIEW_FILE = "README.md"


def _folder(state: WaveState) -> str:
    return f"[`{state.dir_name}`](waves/{state.dir_name}/)"


def _runbook(state: WaveState, anchor: str = "") -> str:
    return f"runbooks/{state.dir_name}.md{anchor}"


def _now(plan: Plan) -> list[str]:
    """The active wave, what the next one changes, and the one-line change that moves between them."""
    waves, active = plan.waves, plan.active
    line = f"**Active wave:** {_folder(active)} (stage `{active.wave.stage}`)"
    description = markdown_text(active.wave.description)
    lines = [f"{line}: {description}" if description else f"{line}."]
    if active.index + 1 < len(waves):
        nxt = waves[active.index + 1]
        changes = "; ".join(wave_changes(plan, active, nxt)) or "nothing in the cluster (a stop)"
        lines += [
            "",
            f"**Next wave:** {_folder(nxt)} changes: {changes}.",
            "",
            f"To advance, set `activeWave: {nxt.name}` in the stack (one line), run `gpuplatform synth` "
            f"and follow [its runbook]({_runbook(nxt)}).",
        ]
    else:
        lines += ["", "This is the last wave: the migration is done once its gates hold."]
    if active.index > 0:
        prev = waves[active.index - 1]
        rollback = _runbook(active, f"#rollback-to-{prev.dir_name}")
        lines += [
            "",
            f"To roll back, set `activeWave: {prev.name}` and follow [the rollback of this wave's "
            f"runbook]({rollback}).",
        ]
    return lines


def _gate_ids(plan: Plan, state: WaveState, phase: str) -> str:
    return ", ".join(g.id for g in gates_for_wave(plan, state) if g.phase == phase) or "-"


def _wave_table(plan: Plan) -> list[str]:
    lines = [
        "| | wave | stage | legacy pools | DRA pools | gates before | gates after | runbook |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s in plan.waves:
        mark = "▶" if s.name == plan.platform.active_wave else ""
        drains = f" ({len(s.drains)} draining)" if s.drains else ""
        lines.append(
            f"| {mark} | {_folder(s)} | {s.wave.stage} | {len(s.legacy_pools)}{drains} | {len(s.dra_pools)} | "
            f"{_gate_ids(plan, s, 'pre')} | {_gate_ids(plan, s, 'post')} | [runbook]({_runbook(s)}) |"
        )
    return lines


def _pool_table(plan: Plan) -> list[str]:
    lines = ["| pool | nodes | DRA from | drained in |", "|---|---|---|---|"]
    for pool in plan.platform.node_pools:
        dra = next(
            (s.dir_name for s in plan.waves if s.pool_modes[pool.name] == "dra" and s.present(pool.name)),
            "never",
        )
        drained = ", ".join(s.dir_name for s in plan.waves if pool.name in s.drains) or "-"
        nodes = str(len(pool.nodes)) if pool.provisioner is None else pool.provisioner.kind
        if pool.takes_over_from is not None:
            nodes += f", new: {pool.provisioner.min_nodes if pool.provisioner else 0} node(s) of {pool.takes_over_from}"
        lines.append(f"| {pool.name} | {nodes} | {dra} | {drained} |")
    return lines


def render_overview(plan: Plan) -> str:
    """The Markdown overview of `plan`'s platform; the same bytes for the same plan."""
    p = plan.platform
    lines = [
        f"# {p.name}: GPU allocation, device plugin to DRA",
        "",
        f"`{p.name}` moves {len(p.node_pools)} GPU node pool(s) from the NVIDIA device plugin to Dynamic "
        f"Resource Allocation in {len(plan.waves)} waves, one folder each under `waves/`. The GitOps engine "
        "applies the wave named by `activeWave`; every wave is reversible and its gates prove it. Rendered "
        "by `gpuplatform synth`: change the stack, not this file.",
        "",
        *_now(plan),
        "",
        "## Pools and waves",
        "",
        "Amber: the device plugin allocates the pool's GPUs; green: the DRA driver; grey, dashed: the "
        "pool is drained for the next wave; thick border: the active wave. Left to right is the advance, "
        "right to left the rollback. Pools that take the same path share a row.",
        "",
        mermaid_block(plan).rstrip("\n"),
        "",
        "## Waves",
        "",
        *_wave_table(plan),
        "",
        "## Pools",
        "",
        *_pool_table(plan),
    ]
    return "\n".join(lines) + "\n"
