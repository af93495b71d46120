"""The migration at a glance as a Mermaid flowchart: node pools x waves, coloured by allocator.

One row per group of pools that share a path through the waves (same allocator and drain in
every wave), one column per wave, a header row of waves with the active one marked and a row of
each wave's gates. Read left to right it is the advance, right to left the rollback. GitHub's
Mermaid refuses graphs of more than 500 links, so the rows are cut to keep the graph within
`MAX_LINKS`, and a last node says how many pools it leaves to the README's table.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplatform.gates import gates_for_wave
from gpuplatform.plan.waves import Plan, WaveState

__all__ = ["CLASSES", "MAX_LINKS", "mermaid_block", "overview_mermaid"]

#: Links the graph may hold: GitHub's Mermaid renders at most 500 (its `maxEdges`).
MAX_LINKS = 400
#: Pool names shown in a row's label before `+N more`.
_NAMES_SHOWN = 3
#: Every class the graph uses, and its style: amber for the device plugin, green for DRA.
CLASSES: dict[str, str] = {
    "legacy": "fill:#fde2b3,stroke:#b26b00,color:#3d2600",
    "dra": "fill:#c8ecc9,stroke:#2e7d32,color:#0d3310",
    "absent": "fill:#ffffff,stroke:#9e9e9e,color:#757575,stroke-dasharray:2 2",
    "drain": "fill:#e0e0e0,stroke:#616161,color:#212121,stroke-dasharray:5 3",
    "wave": "fill:#ffffff,stroke:#455a64,color:#263238",
    "gates": "fill:#f1ecfb,stroke:#5e35b1,color:#1a0f3d",
    "rowname": "fill:none,stroke:none",
    "now": "stroke-width:4px",
}
_TEXT: dict[str, str] = {"legacy": "legacy", "dra": "DRA", "absent": "not created"}

_Cell = tuple[str, bool]
"""A pool's allocator in one wave, and whether that wave drains it."""


@dataclass(frozen=True)
class _Row:
    pools: tuple[str, ...]
    cells: tuple[_Cell, ...]


def _rows(plan: Plan) -> list[_Row]:
    """Pools grouped by their path through the waves, those that move to DRA first on top."""
    groups: dict[tuple[_Cell, ...], list[str]] = {}
    for pool in plan.platform.node_pools:
        path = tuple(
            (s.pool_modes[pool.name] if s.present(pool.name) else "absent", pool.name in s.drains)
            for s in plan.waves
        )
        groups.setdefault(path, []).append(pool.name)
    rows = [_Row(tuple(pools), path) for path, pools in groups.items()]
    return sorted(rows, key=lambda r: sum(mode == "legacy" for mode, _ in r.cells))


def _label(pools: tuple[str, ...]) -> str:
    shown = ", ".join(pools[:_NAMES_SHOWN])
    more = len(pools) - _NAMES_SHOWN
    return f"{shown} +{more} more" if more > 0 else shown


def _wave_label(plan: Plan, state: WaveState) -> str:
    parts = [state.dir_name]
    if state.wave.stage != state.name:
        parts.append(state.wave.stage)
    if state.name == plan.platform.active_wave:
        parts.append("▶ active")
    return "<br/>".join(parts)


def _gates_label(plan: Plan, state: WaveState) -> str:
    gates = gates_for_wave(plan, state)
    return "<br/>".join(f"{g.phase} {g.id}" for g in gates) or "no gate"


def _cell_label(cell: _Cell) -> str:
    mode, drained = cell
    return f"{_TEXT[mode]}<br/>draining" if drained else _TEXT[mode]


def _chain(first: str, ids: list[str], link: str) -> str:
    return f"  {first} {link} " + f" {link} ".join(ids)


def overview_mermaid(plan: Plan) -> str:
    """The flowchart text (no fences), ending in a newline; the same bytes for the same plan."""
    waves = plan.waves
    rows = _rows(plan)
    shown = rows[: max(1, MAX_LINKS // len(waves) - 2)]
    lines = [
        "flowchart LR",
        f"  %% {plan.platform.name}: node pools x waves, coloured by allocator (gpuplatform)",
        '  waves["wave"]',
        *(f'  w{s.index}["{_wave_label(plan, s)}"]' for s in waves),
        _chain("waves", [f"w{s.index}" for s in waves], "-->"),
    ]
    classes: dict[str, list[str]] = {name: [] for name in CLASSES}
    classes["rowname"].append("waves")
    classes["wave"] += [f"w{s.index}" for s in waves]
    for r, row in enumerate(shown):
        ids = [f"p{r}w{s.index}" for s in waves]
        lines.append(f'  p{r}["{_label(row.pools)}"]')
        lines += [f'  {i}["{_cell_label(c)}"]' for i, c in zip(ids, row.cells, strict=True)]
        lines.append(_chain(f"p{r}", ids, "---"))
        classes["rowname"].append(f"p{r}")
        for i, (mode, drained) in zip(ids, row.cells, strict=True):
            classes["drain" if drained else mode].append(i)
    left = sum(len(row.pools) for row in rows[len(shown) :])
    if left:
        lines.append(f'  more["+{left} more pools: see the table"]')
        classes["rowname"].append("more")
    lines.append('  gates["gates"]')
    lines += [f'  g{s.index}["{_gates_label(plan, s)}"]' for s in waves]
    lines.append(_chain("gates", [f"g{s.index}" for s in waves], "---"))
    classes["rowname"].append("gates")
    classes["gates"] += [f"g{s.index}" for s in waves]
    active = plan.active.index
    classes["now"] += [f"w{active}", *(f"p{r}w{active}" for r in range(len(shown))), f"g{active}"]
    lines += [f"  classDef {name} {style}" for name, style in CLASSES.items() if classes[name]]
    lines += [f"  class {','.join(ids)} {name}" for name, ids in classes.items() if ids]
    return "\n".join(lines) + "\n"


def mermaid_block(plan: Plan) -> str:
    """`overview_mermaid` fenced as a Markdown code block: what the README holds and `plan
    --format mermaid` prints."""
    return f"```mermaid\n{overview_mermaid(plan)}```\n"
