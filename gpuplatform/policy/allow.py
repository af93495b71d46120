"""`--allow CODE`: an error-level finding the user overrode, for `check` and `synth` alike."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from gpuplatform.capacity.codes import CAPACITY_CODES
from gpuplatform.errors import InputError, Problem
from gpuplatform.policy.rules import RULES

__all__ = ["allowed", "refuse_unknown_codes"]


def refuse_unknown_codes(allow: Sequence[str]) -> None:
    """InputError for an `--allow` code that names no error-level rule or capacity verdict (GP280): a
    typo must not pass for an override."""
    known = set(RULES) | {code for code, (severity, _, _) in CAPACITY_CODES.items() if severity == "error"}
    unknown = sorted(set(allow) - known)
    if unknown:
        raise InputError.single(
            "--allow", "", f"no rule {', '.join(unknown)} (rules: {', '.join(sorted(known))})"
        )


def allowed(problem: Problem, allow: Sequence[str]) -> Problem:
    """An error-level finding the user overrode, reported as a warning that says so."""
    if problem.severity != "error" or problem.code not in allow:
        return problem
    message = f"{problem.message} (allowed with --allow {problem.code}, recorded in the lock file)"
    return replace(problem, severity="warning", message=message)
