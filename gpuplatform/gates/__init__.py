"""Wave gates: each one module of `catalog/` (what it checks, what it reads, when a wave has it,
its jq program), shipped inside the POSIX sh script its Job runs (`scripts.py`), the same in every
wave, with the wave's facts it judges by (`render/gate_facts.py`).

Adding a gate is a module in `catalog/`, a fact in `render/gate_facts.py` when it needs one the
wave does not yet give, and its section in docs/evidence.md. The gate Job runs the program in the
cluster; `gpuplatform simulate` runs the program its rendered script holds on the model's cluster,
and `gpuplatform evidence` runs it on a snapshot (`evidence/`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from gpuplatform.gates import scripts
from gpuplatform.gates.catalog import EVIDENCE_CHECKS, GATES
from gpuplatform.gates.gate import Access, Gate

if TYPE_CHECKING:
    from gpuplatform.plan.waves import Plan, WaveState

__all__ = [
    "EVIDENCE_CHECKS",
    "GATES",
    "Access",
    "Gate",
    "evidence_checks",
    "gate_data",
    "gate_facts",
    "gate_script",
    "gates_for_wave",
]


def gates_for_wave(plan: Plan, state: WaveState) -> list[Gate]:
    """The Job gates that apply to `state`, pre-transition gates first."""
    return sorted((g for g in GATES if g.applies(plan, state)), key=lambda g: (g.phase != "pre", g.id))


def evidence_checks(plan: Plan, state: WaveState) -> list[Gate]:
    """The evidence checks that apply to `state` (`drained` only in a drain wave)."""
    return [g for g in EVIDENCE_CHECKS if g.applies(plan, state)]


def gate_data(gate: Gate, facts: dict[str, Any]) -> dict[str, Any]:
    """The facts `gate` judges by, out of the wave's `facts` (`wave_data`, computed once per wave)."""
    return {key: facts[key] for key in gate.data}


def gate_script(gate: Gate) -> str:
    """The POSIX sh script of `gate`'s Job, the same in every wave: exit 0 held, 3 not held within
    one attempt, 1 broken."""
    return scripts.gate_script(gate.id, gate.kinds, gate.logs)


def gate_facts(gate: Gate, facts: dict[str, Any]) -> str:
    """The facts file of `gate`'s Job in a wave: its part of the wave's `facts` as JSON with one
    line per fact and per item of a list fact (a pool, a side), so a wave diff shows which changed."""
    lines = []
    for key, value in sorted(gate_data(gate, facts).items()):
        if isinstance(value, list) and value:
            items = ",\n".join(f"    {_compact(item)}" for item in value)
            lines.append(f"  {json.dumps(key)}: [\n{items}\n  ]")
        else:
            lines.append(f"  {json.dumps(key)}: {_compact(value)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def _compact(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(", ", ": "))
