"""`gpuplatform evidence`: a wave's gates judged against a snapshot of the cluster."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gpuplatform.commands.selection import load_platforms
from gpuplatform.errors import InputError
from gpuplatform.evidence.evaluate import evaluate_wave
from gpuplatform.evidence.report import all_held, evidence_markdown
from gpuplatform.evidence.verdict import GateResult
from gpuplatform.plan.waves import plan_platform
from gpuplatform.snapshot.manifest import check_age, parse_duration
from gpuplatform.snapshot.read import Snapshot, load_snapshot

__all__ = ["EvidenceReport", "evidence_command"]


@dataclass(frozen=True)
class EvidenceReport:
    """One platform's gates of one wave, each held or not, with the snapshot they were judged on."""

    platform: str
    wave: str
    snapshot: Snapshot
    results: list[GateResult]

    @property
    def exit_code(self) -> int:
        """1 when a gate does not hold."""
        return 0 if all_held(self.results) else 1

    def text(self) -> str:
        """The Markdown a reviewer reads (a pull request comment)."""
        return evidence_markdown(self.platform, self.wave, self.snapshot, self.results)

    def as_dict(self) -> dict[str, Any]:
        """The same verdicts as data."""
        return {
            "platform": self.platform,
            "wave": self.wave,
            "held": all_held(self.results),
            "gates": [r.as_dict() for r in self.results],
        }


def evidence_command(
    stack: str,
    overlays: Sequence[str],
    platform: str | None,
    wave: str,
    snapshot: str,
    max_age: str,
    allow_stale: bool = False,
) -> list[EvidenceReport]:
    """The gates of `wave` of the platform of STACK, judged against the `snapshot` folder; a
    snapshot older than `max_age` (a duration: 30m, 24h, 7d), or undated, is refused unless
    `allow_stale`."""
    bound = parse_duration(max_age)
    snap = load_snapshot(Path(snapshot))
    if not allow_stale:
        check_age(snap.folder, snap.manifest, bound, datetime.now(UTC))
    reports = []
    for lp in load_platforms(stack, overlays, platform, one=True):
        plan = plan_platform(lp.platform)
        try:
            state = plan.wave(wave)
        except KeyError:
            raise InputError.single("--wave", "", plan.no_wave(wave)) from None
        reports.append(EvidenceReport(lp.platform.name, wave, snap, evaluate_wave(plan, state, snap)))
    return reports
