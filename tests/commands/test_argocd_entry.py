"""`gpuplatform argocd-entry`: one root per Argo CD platform, naming no wave; refusals are input errors."""

from __future__ import annotations

import yaml
from click.testing import CliRunner

from gpuplatform.cli import main
from gpuplatform.model import Platform
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.argocd_root import render_root_application
from tests.conftest import REPO

STACKS = REPO / "stacks"


def test_every_argo_platform_gets_a_root_on_its_delivery_folder() -> None:
    result = CliRunner().invoke(main, ["argocd-entry", str(STACKS / "reference.py")])
    assert result.exit_code == 0, result.stderr
    roots = list(yaml.safe_load_all(result.stdout))
    assert [
        (r["metadata"]["name"], r["spec"]["source"]["path"], r["spec"]["source"]["targetRevision"])
        for r in roots
    ] == [
        ("reference-root", "dist/reference/delivery/argocd", "main"),
        ("reference-staging-root", "dist/reference-staging/delivery/argocd", "staging"),
    ]


def test_the_root_is_the_same_in_every_wave(reference: Platform) -> None:
    roots = [
        render_root_application(
            plan_platform(reference.model_copy(update={"active_wave": w.name})),
            reference.name,
            "delivery/argocd",
        )
        for w in reference.waves
    ]
    assert all(r == roots[0] for r in roots)
    assert "gpuplatform.dev/wave" not in roots[0]["metadata"]["labels"]


def test_a_flux_only_platform_has_no_argo_entry() -> None:
    result = CliRunner().invoke(main, ["argocd-entry", str(STACKS / "nim-lab.yaml")])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == (
        f"error: {STACKS / 'nim-lab.yaml'}:spec.delivery.engines: platform 'nim-lab' renders no Argo CD "
        "entry: add argocd to the engines\n"
    )


def test_a_stack_of_one_argo_platform_has_no_applicationset_root() -> None:
    result = CliRunner().invoke(main, ["argocd-entry", str(STACKS / "mixed-fleet.yaml"), "--applicationset"])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "has no ApplicationSet: a stack renders one only for several Argo CD platforms" in result.stderr
