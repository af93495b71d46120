"""Wave gates as they ship: each gate's jq program (`programs.py`), the wave's facts it judges
by (`data.py`), and the POSIX sh script its Job runs (`scripts.py`).

The catalog (which gates a wave has) is `plan/gates.py`; a snapshot is judged by the same
programs in `evidence/`. The gate Job runs a program in the cluster, `gpuplatform evidence` runs
it on a snapshot.
"""

from __future__ import annotations

import json
from typing import Any

from gpuplatform.gates import scripts
from gpuplatform.plan.gates import EVIDENCE_CHECKS, GATES, Access, Gate, gate_data, gates_for_wave
from gpuplatform.plan.waves import Plan

__all__ = [
    "EVIDENCE_CHECKS",
    "GATES",
    "Access",
    "Gate",
    "gate_data",
    "gate_script",
    "gates_for_wave",
]


def gate_script(gate: Gate, plan: Plan, facts: dict[str, Any]) -> str:
    """The POSIX sh script the gate's Job runs on the wave's `facts`: exit 0 held, 3 not held
    within one attempt."""
    data = json.dumps(gate_data(gate, facts), sort_keys=True, separators=(",", ":"))
    return scripts.gate_script(
        gate.id, gate.kinds, data, plan.platform.delivery.timeout_minutes * 60, gate.logs
    )
