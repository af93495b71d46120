"""Run a gate's jq program offline, as the gate Job does in the cluster, and read its lines."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import jq

from gpuplatform.gates.programs import program

__all__ = ["GateResult", "Status", "judge", "run_program"]

Status = Literal["held", "broken", "unknown"]


@dataclass
class GateResult:
    """A gate's verdict: what breaks it, what keeps it from being judged, what proves it."""

    id: str
    title: str
    findings: list[str] = field(default_factory=list)
    unknowns: list[str] = field(default_factory=list)
    proof: list[str] = field(default_factory=list)

    @property
    def status(self) -> Status:
        """Broken on any finding; unknown (never held) on anything that could not be judged."""
        if self.findings:
            return "broken"
        return "unknown" if self.unknowns else "held"

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "status": self.status,
            "findings": self.findings,
            "unknown": self.unknowns,
            "proof": self.proof,
        }


def run_program(gate_id: str, data: dict[str, Any], document: dict[str, Any]) -> list[str]:
    """The lines the gate's program prints for `document` (the kinds it reads, and `logs`)."""
    compiled = jq.compile(program(gate_id), args={"data": data})
    return [str(line) for line in compiled.input_value(document).all()]


def judge(result: GateResult, lines: list[str]) -> GateResult:
    """Sort the program's lines into `result` (`act:` lines are the Job's; offline nothing is removed)."""
    for line in lines:
        kind, _, text = line.partition(": ")
        if kind == "violation":
            result.findings.append(text)
        elif kind == "unknown":
            result.unknowns.append(text)
        elif kind == "proof":
            result.proof.append(text)
    return result
