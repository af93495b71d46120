"""Run the policy rules over a spec document written to a temporary file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpuplatform.errors import Problem
from gpuplatform.load.stacks import LoadedPlatform, load_stack
from gpuplatform.plan.waves import plan_platform
from gpuplatform.policy.rules import run_rules
from gpuplatform.render.tree import render_tree
from tests.specs import write_spec

__all__ = ["codes", "findings", "rule_findings"]


def rule_findings(loaded: LoadedPlatform, nodes: frozenset[str] | None = None) -> list[Problem]:
    """`run_rules` as check runs it (only the layers rules read are rendered), asserted to find
    exactly what the rules find in the whole tree synth hands them."""
    found = run_rules(loaded, nodes)
    whole = run_rules(loaded, nodes, tree=render_tree(plan_platform(loaded.platform)))
    assert found == whole, "the rules find otherwise in synth's whole tree than in check's layers"
    return found


def findings(tmp_path: Path, doc: dict[str, Any], nodes: frozenset[str] | None = None) -> list[Problem]:
    """Every rule finding for `doc` (loaded like a user's spec file)."""
    (loaded,) = load_stack(write_spec(tmp_path / "lab.yaml", doc))
    return rule_findings(loaded, nodes)


def codes(tmp_path: Path, doc: dict[str, Any], nodes: frozenset[str] | None = None) -> set[str]:
    """The codes that fire for `doc`."""
    return {p.code for p in findings(tmp_path, doc, nodes)}
