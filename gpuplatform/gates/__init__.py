"""Wave gates as they ship: each gate's jq program (`programs.py`) inside the POSIX sh script its
Job runs (`scripts.py`), the same in every wave, and the wave's facts it judges by (`data.py`).

The catalog (which gates a wave has) is `plan/gates.py`; a snapshot is judged by the same
programs in `evidence/`. The gate Job runs a program in the cluster, `gpuplatform evidence` runs
it on a snapshot.
"""

from __future__ import annotations

import json
from typing import Any

from gpuplatform.gates import scripts
from gpuplatform.plan.gates import (
    EVIDENCE_CHECKS,
    GATES,
    Access,
    Gate,
    evidence_checks,
    gate_data,
    gates_for_wave,
)

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
