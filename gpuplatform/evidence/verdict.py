"""Run a gate's jq program offline, as the gate Job does in the cluster, and read its lines."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

import jq
import orjson

from gpuplatform.gates.programs import programs

__all__ = ["GateResult", "Status", "jq_input", "judge", "run_programs"]

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


def jq_input(document: dict[str, Any]) -> str:
    """`document` as the JSON text jq reads: serialised by orjson (~10x faster than the binding's
    json.dumps for the ~10 MB of a 2,000-node snapshot); what orjson cannot write, by json.dumps."""
    try:
        return orjson.dumps(document).decode()
    except orjson.JSONEncodeError:
        return json.dumps(document)


def run_programs(gates: list[tuple[str, tuple[str, ...], dict[str, Any]]], text: str) -> list[list[str]]:
    """The lines of each (gate, kinds it reads, its data) for the document `text` (`jq_input`),
    parsed by jq once for all."""
    if not gates:
        return []
    compiled = jq.compile(
        programs([(g, kinds) for g, kinds, _ in gates]), args={"datas": [d for *_, d in gates]}
    )
    return [[str(line) for line in lines] for lines in compiled.input_text(text).all()]


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
