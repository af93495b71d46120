"""The rule registry: stable codes, severities, explanations, and one way to run them all."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cached_property

from gpuplatform.adopt.running import RunningRelease, load_running_releases
from gpuplatform.errors import Severity
from gpuplatform.load.stacks import LoadedPlatform
from gpuplatform.model.platform import Platform
from gpuplatform.plan.waves import Plan, plan_platform
from gpuplatform.render.tree import LAYERS, Tree, render_wave
from gpuplatform.simulate.rendered import ReleaseSpec, rendered_releases
from gpuplatform.simulate.verdict import Refusal, simulation_verdict
from gpuplatform.snapshot.read import Snapshot

__all__ = ["RULES", "RULE_LAYERS", "Finding", "Rule", "RuleContext", "rule"]

#: The layers whose rendered objects rules read: Helm releases (GP121, GP210, GP240-243), Nodes
#: (GP102, GP244) and the validation Job (GP211); hand-offs (GP102) are rendered with every wave.
RULE_LAYERS = frozenset({"00-operators", "10-nodes", "50-gates"})


@dataclass(frozen=True)
class Finding:
    """What a rule found: where (a spec path), what, and how to fix it."""

    loc: str
    message: str
    hint: str = ""


@dataclass(frozen=True)
class RuleContext:
    """What every rule may read: the loaded platform, its plan and, optionally, the cluster's nodes
    and a cluster snapshot (`check --snapshot`)."""

    loaded: LoadedPlatform
    cluster_nodes: frozenset[str] | None = None
    rendered: Tree | None = None
    """The tree synth already rendered, so that the rules do not render it again."""
    snapshot: Snapshot | None = None
    simulated: tuple[Refusal, ...] | None = None
    """The simulation verdict when the caller has it (a forked child or the verdict cache computed it)."""

    @property
    def platform(self) -> Platform:
        return self.loaded.platform

    @cached_property
    def plan(self) -> Plan:
        return plan_platform(self.loaded.platform)

    @cached_property
    def running(self) -> dict[tuple[str, str], RunningRelease] | None:
        """Helm releases the snapshot captured, by (namespace, name); None without a snapshot."""
        return load_running_releases(self.snapshot.folder) if self.snapshot is not None else None

    @cached_property
    def tree(self) -> Tree:
        """The rendered objects of every wave, hand-offs included (rules that read rendered objects
        share it). Without synth's tree, only the `RULE_LAYERS` of each wave and its hand-offs are
        rendered: no rule reads another layer, a runbook or an entry point (a test holds that the
        rules find the same in synth's whole tree)."""
        if self.rendered is not None:
            return self.rendered
        tree = Tree(self.plan.platform.name)
        layers = tuple(layer for layer in LAYERS if layer.name in RULE_LAYERS)
        for state in self.plan.waves:
            render_wave(tree, self.plan, state, layers)
        return tree

    @cached_property
    def releases(self) -> list[tuple[str, str, ReleaseSpec]]:
        """(wave folder, file, release) of every rendered Helm release of either engine, read once
        for the rules that judge chart values."""
        return list(rendered_releases(self.tree, self.plan))

    @cached_property
    def simulation(self) -> tuple[Refusal, ...]:
        """The simulation verdict (GP290): the caller's, else every accepted transition replayed here."""
        if self.simulated is not None:
            return self.simulated
        return simulation_verdict(self.loaded, self.rendered, self.snapshot)


Check = Callable[[RuleContext], Iterable[Finding]]


@dataclass(frozen=True)
class Rule:
    """A safety rule; `code` never changes meaning and is never reused."""

    code: str
    severity: Severity
    title: str
    explanation: str
    check: Check


RULES: dict[str, Rule] = {}


def rule(code: str, severity: Severity, title: str, explanation: str) -> Callable[[Check], Check]:
    """Register `check` under `code` (import-time; codes must be unique)."""

    def register(check: Check) -> Check:
        if code in RULES:
            raise ValueError(f"rule code {code} registered twice")
        RULES[code] = Rule(code, severity, title, explanation.strip(), check)
        return check

    return register
