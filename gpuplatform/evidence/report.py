"""Evidence reports: Markdown for the reviewer of the pull request that moves `activeWave` (the
JSON for CI is `commands.evidence.EvidenceReport.as_dict`)."""

from __future__ import annotations

from gpuplatform.evidence.evaluate import GateResult
from gpuplatform.snapshot.read import Snapshot

__all__ = ["all_held", "evidence_markdown"]

_ICONS = {"held": "held", "broken": "BROKEN", "unknown": "unknown (counts as not held)"}


def all_held(results: list[GateResult]) -> bool:
    """Exit 0 only when every gate held; unknown never counts as held."""
    return all(r.status == "held" for r in results)


def evidence_markdown(platform: str, wave: str, snapshot: Snapshot, results: list[GateResult]) -> str:
    """The report a reviewer reads."""
    manifest = snapshot.manifest or {}
    lines = [f"# Evidence: {platform}, wave {wave}", ""]
    if manifest:
        lines += [
            f"Snapshot of context `{manifest.get('context')}` (server {manifest.get('serverVersion')}) at {manifest.get('time')}.",
            "",
        ]
        if manifest.get("missing"):
            lines += [f"Missing from the snapshot: {', '.join(manifest['missing'])}.", ""]
    verdict = "All gates hold." if all_held(results) else "NOT all gates hold: do not advance."
    lines += [verdict, "", "| gate | status | what it checks |", "|---|---|---|"]
    lines += [f"| `{r.id}` | {_ICONS[r.status]} | {r.title} |" for r in results]
    for r in results:
        lines += ["", f"## {r.id}: {_ICONS[r.status]}", ""]
        lines += _section(r)
    return "\n".join(lines) + "\n"


def _section(result: GateResult) -> list[str]:
    """Findings, what could not be judged, then the proof, each under its own heading."""
    if not (result.findings or result.unknowns or result.proof):
        return ["Nothing was checked: the wave gives this gate no object to judge."]
    lines: list[str] = []
    for heading, items in (
        ("Findings", result.findings),
        ("Could not be judged", result.unknowns),
        ("Proof" if result.status == "held" else "What holds", result.proof),
    ):
        if items:
            lines += [f"{heading}:", "", *[f"- {item}" for item in items], ""]
    return lines[:-1]
