"""`--platform` on every command that reads a stack: one platform's output, and exit 2 naming the
platforms for an unknown name; `synth` prints the capacity warnings `check` prints."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from gpuplatform.cli import main
from tests.conftest import REPO
from tests.specs import short_spec, write_spec

#: reference.py declares the reference-staging overlay: two platforms, every output doubled.
STACK = str(REPO / "stacks" / "reference.py")

COMMANDS: dict[str, list[str]] = {
    "plan": ["plan", STACK, "--format", "json"],
    "check": ["check", STACK, "--format", "json"],
    "simulate": ["simulate", STACK, "--from", "baseline", "--to", "pilot-pool", "--format", "json"],
    "capacity": ["capacity", STACK, "--wave", "baseline", "--format", "json"],
    "diff": ["diff", STACK, "--waves", "baseline", "pilot-pool"],
}


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_unknown_platform_exits_2_naming_the_platforms(command: str) -> None:
    result = run(*COMMANDS[command], "--platform", "prod")
    assert result.exit_code == 2, result.output
    assert "has no platform 'prod' (it has reference, reference-staging)" in result.stderr


def _platforms(command: str, result: Result) -> list[str]:
    found = json.loads(result.stdout)
    return [r.get("platform") for r in found]


@pytest.mark.parametrize("command", ["plan", "check", "simulate", "capacity"])
def test_platform_reads_one_platform_of_the_stack(command: str) -> None:
    both = run(*COMMANDS[command])
    one = run(*COMMANDS[command], "--platform", "reference-staging")
    assert one.exit_code in (0, 1) and both.exit_code in (0, 1), one.output
    assert _platforms(command, both) == ["reference", "reference-staging"]
    assert _platforms(command, one) == ["reference-staging"]


def test_diff_waves_of_one_platform() -> None:
    both = run(*COMMANDS["diff"])
    one = run(*COMMANDS["diff"], "--platform", "reference-staging")
    assert "a/reference/" in both.stdout and "a/reference-staging/" in both.stdout
    assert "a/reference/" not in one.stdout and "a/reference-staging/" in one.stdout


def test_synth_prints_the_capacity_warnings_check_prints(tmp_path: Path) -> None:
    # GIVEN a spec whose last waves cannot place a 4 x 4-GPU workload (GP280, from `check`), its
    # tenant's quota room for all four pods (else the simulation refuses the conversion: GP290)
    spec = short_spec("claims")
    spec["spec"]["tenants"][0]["quota"] = {"devices": 16, "gpus": 16}
    stack = str(write_spec(tmp_path / "lab.yaml", spec))
    checked = {line for line in run("check", stack).stderr.splitlines() if "GP28" in line}
    synthed = run("synth", stack, "--out", str(tmp_path / "out"))
    assert checked and checked <= set(synthed.stderr.splitlines()), synthed.output
