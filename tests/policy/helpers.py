"""Run the policy rules over a spec document written to a temporary file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpuplatform.errors import Problem
from gpuplatform.load.stacks import load_stack
from gpuplatform.policy.rules import run_rules
from tests.specs import write_spec

__all__ = ["codes", "findings"]


def findings(tmp_path: Path, doc: dict[str, Any], nodes: frozenset[str] | None = None) -> list[Problem]:
    """Every rule finding for `doc` (loaded like a user's spec file)."""
    (loaded,) = load_stack(write_spec(tmp_path / "lab.yaml", doc))
    return run_rules(loaded, nodes)


def codes(tmp_path: Path, doc: dict[str, Any], nodes: frozenset[str] | None = None) -> set[str]:
    """The codes that fire for `doc`."""
    return {p.code for p in findings(tmp_path, doc, nodes)}
