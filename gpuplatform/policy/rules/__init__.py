"""The safety rules, registered by importing their modules; `run_rules` runs them all."""

from __future__ import annotations

from collections.abc import Mapping

from gpuplatform.adopt.running import RunningRelease
from gpuplatform.errors import Problem
from gpuplatform.load.stacks import LoadedPlatform
from gpuplatform.policy.registry import RULES, RuleContext
from gpuplatform.policy.rules import adoption, allocators, releases, tenants, waves
from gpuplatform.render.tree import Tree

__all__ = ["RULES", "run_rules"]

_MODULES = (adoption, allocators, releases, tenants, waves)


def run_rules(
    loaded: LoadedPlatform,
    cluster_nodes: frozenset[str] | None = None,
    tree: Tree | None = None,
    running: Mapping[tuple[str, str], RunningRelease] | None = None,
) -> list[Problem]:
    """Every finding of every rule, as Problems located in the stack file, sorted.

    `tree` is the platform's rendered tree when the caller has it already (synth does); `running`
    the Helm releases a snapshot captured (`check --snapshot`).
    """
    context = RuleContext(loaded, cluster_nodes, tree, running)
    problems = []
    for code in sorted(RULES):
        r = RULES[code]
        for finding in r.check(context):
            problems.append(
                Problem(
                    loaded.source, finding.loc, code, finding.message, severity=r.severity, hint=finding.hint
                )
            )
    return sorted(set(problems))
