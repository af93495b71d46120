"""The safety rules, registered by importing their modules; `run_rules` runs them all."""

from __future__ import annotations

import gpuplatform.kueue.rules  # noqa: F401 (importing a rule module registers its rules)
from gpuplatform.errors import Problem
from gpuplatform.load.stacks import LoadedPlatform
from gpuplatform.policy.registry import RULES, RuleContext
from gpuplatform.policy.rules import (  # noqa: F401 (importing a rule module registers its rules)
    adoption,
    allocators,
    engines,
    gates,
    isolation,
    releases,
    simulation,
    tenants,
    transitions,
    waves,
)
from gpuplatform.render.tree import Tree
from gpuplatform.simulate.verdict import Refusal
from gpuplatform.snapshot.read import Snapshot

__all__ = ["RULES", "run_rules"]


def run_rules(
    loaded: LoadedPlatform,
    cluster_nodes: frozenset[str] | None = None,
    tree: Tree | None = None,
    snapshot: Snapshot | None = None,
    simulated: tuple[Refusal, ...] | None = None,
) -> list[Problem]:
    """Every finding of every rule, as Problems located in the file that wrote the field (the stack
    or an overlay), sorted.

    `tree` is the platform's rendered tree when the caller has it already (synth does); rules that
    compare the plan with a running cluster read `snapshot`; GP290 reads `simulated` when the caller
    has the simulation verdict already, else replays the transitions itself.
    """
    context = RuleContext(loaded, cluster_nodes, tree, snapshot, simulated)
    problems = []
    for code in sorted(RULES):
        r = RULES[code]
        for finding in r.check(context):
            file, loc = loaded.locate(finding.loc)
            problems.append(Problem(file, loc, code, finding.message, severity=r.severity, hint=finding.hint))
    return sorted(set(problems))
