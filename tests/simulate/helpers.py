"""Specs and a runner for simulator tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpuplatform.load.stacks import load_stack
from gpuplatform.render import operators
from gpuplatform.simulate.run import PlatformReport, simulate_platform
from gpuplatform.simulate.world import Violation
from tests.specs import minimal_spec, write_spec


def sim_spec() -> dict[str, Any]:
    """The minimal spec with its GPU Operator release rendered and both engines."""
    doc = minimal_spec()
    doc["spec"]["gpuOperator"] = {"managed": True}
    doc["spec"]["delivery"]["engines"] = ["argocd", "flux"]
    return doc


def simulate(
    tmp_path: Path,
    doc: dict[str, Any],
    source: str | None = None,
    target: str | None = None,
    engines: tuple[str, ...] = ("argocd", "flux"),
) -> PlatformReport:
    (loaded,) = load_stack(write_spec(tmp_path / "lab.yaml", doc))
    return simulate_platform(loaded, source, target, engines)


def violations(report: PlatformReport, *, late: bool | None = None) -> list[tuple[str, str, str, Violation]]:
    """(engine, from, to, violation) of every failed replay (`late`: only those variants)."""
    return [
        (r.engine, r.source, r.target, r.violation)
        for r in report.results
        if r.violation is not None and (late is None or r.late == late)
    ]


def without_application_finalizer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Render child Applications without the resources finalizer: Argo CD then orphans a release
    whose Application goes (a known failure `simulate` catches as `leftovers`)."""
    original = operators.argocd_application

    def no_finalizer(*args: Any, **kwargs: Any) -> dict[str, Any]:
        app = original(*args, **kwargs)
        app["metadata"].pop("finalizers", None)
        return app

    monkeypatch.setattr(operators, "argocd_application", no_finalizer)
