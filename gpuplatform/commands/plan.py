"""`gpuplatform plan`: each wave's pools, classes, tenants and changes, or one transition reviewed
with its steps, hand-offs, refusals and capacity verdict."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from gpuplatform.background import Background
from gpuplatform.commands.diff import reviewed_transitions
from gpuplatform.commands.selection import load_platforms, one_transition
from gpuplatform.errors import InputError
from gpuplatform.load.stacks import LoadedPlatform
from gpuplatform.plan.report import plan_report, plan_text
from gpuplatform.plan.transitions import Transition
from gpuplatform.plan.waves import Plan, plan_platform
from gpuplatform.policy.selectors import refuse_uncompilable
from gpuplatform.render.overview_mermaid import mermaid_block
from gpuplatform.render.quota import quota_notes

__all__ = [
    "PlanReport",
    "TransitionReport",
    "plan_command",
    "plan_mermaid",
    "plan_platforms",
    "plan_transitions",
]


@dataclass(frozen=True)
class PlanReport:
    """One platform's plan: per wave, the legacy and DRA pools, what exists and what changed."""

    plan: Plan
    quota_notes: dict[str, list[str]] = field(default_factory=dict)
    exit_code: int = 0

    def as_dict(self) -> dict[str, Any]:
        return plan_report(self.plan, self.quota_notes)

    def text(self) -> str:
        return plan_text(self.as_dict())

    def mermaid(self) -> str:
        """The pools x waves diagram of `dist/<platform>/README.md`, as a Markdown block."""
        return mermaid_block(self.plan)


@dataclass(frozen=True)
class TransitionReport:
    """One platform's transition between two waves, as a reviewer reads it, with its capacity verdict."""

    transition: Transition
    capacity: dict[str, object]

    @property
    def exit_code(self) -> int:
        """1 when the planner refuses the transition."""
        return 1 if self.transition.refusals else 0

    def as_dict(self) -> dict[str, Any]:
        return self.transition.as_dict() | {"capacity": self.capacity}

    def text(self) -> str:
        return f"{self.transition.text()}\ncapacity: {self.capacity['verdict']}"


def plan_platforms(loaded: Sequence[LoadedPlatform]) -> list[PlanReport]:
    """Every platform's plan; InputError when a selector does not compile (as synth refuses it)."""
    refuse_uncompilable(loaded)
    plans = [plan_platform(lp.platform) for lp in loaded]
    return [PlanReport(p, {s.name: quota_notes(p, s) for s in p.waves}) for p in plans]


def _capacity_verdicts(loaded: Sequence[LoadedPlatform], source: str, target: str) -> list[dict[str, object]]:
    from gpuplatform.capacity.verdicts import transition_verdict  # the allocator: ~0.1 s to import

    return [transition_verdict(lp, source, target) for lp in loaded]


def plan_transitions(loaded: Sequence[LoadedPlatform], source: str, target: str) -> list[TransitionReport]:
    """Every platform's transition `source` -> `target` (forward or back); the capacity verdicts
    are placed meanwhile (a forked child where the runtime allows it)."""
    refuse_uncompilable(loaded)
    with Background(partial(_capacity_verdicts, loaded, source, target)) as placed:
        found = reviewed_transitions(loaded, source, target)
        verdicts = placed.result()
    return [TransitionReport(t, v) for t, v in zip(found, verdicts, strict=True)]


def plan_command(
    stack: str,
    overlays: Sequence[str],
    platform: str | None,
    source: str | None = None,
    target: str | None = None,
) -> list[PlanReport] | list[TransitionReport]:
    """`gpuplatform plan`: every wave of each platform, or the transition `--from` `--to`."""
    one_transition(source, target)
    loaded = load_platforms(stack, overlays, platform)
    if source is not None and target is not None:
        return plan_transitions(loaded, source, target)
    return plan_platforms(loaded)


def plan_mermaid(
    stack: str,
    overlays: Sequence[str],
    platform: str | None,
    source: str | None = None,
    target: str | None = None,
) -> str:
    """`gpuplatform plan --format mermaid`: each platform's pools x waves diagram."""
    one_transition(source, target)
    if source is not None:
        raise InputError.single("--format", "", "mermaid draws every wave; leave out --from/--to")
    return "\n".join(r.mermaid() for r in plan_platforms(load_platforms(stack, overlays, platform)))
