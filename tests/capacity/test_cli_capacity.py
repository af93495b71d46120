"""`gpuplatform capacity`, `check` and `plan --from/--to` end to end: verdicts and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from gpuplatform.capacity.verdicts import runbook_capacity_notes
from gpuplatform.cli import main
from gpuplatform.plan.waves import Plan, plan_platform
from gpuplatform.render.runbooks import render_runbooks
from gpuplatform.testing import pod
from tests.capacity.fleets import platform, pool, workload
from tests.conftest import REPO
from tests.specs import healthy_cluster, short_spec, write_spec

NIM_LAB = str(REPO / "stacks" / "nim-lab.yaml")


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def _short_spec(tmp_path: Path) -> str:
    spec = short_spec("cutover")
    return str(write_spec(tmp_path / "lab.yaml", spec))


def test_a_fitting_wave_exits_0_and_json_has_every_moment() -> None:
    result = run("capacity", NIM_LAB, "--all", "--format", "json")
    assert result.exit_code == 0, result.stderr
    waves = json.loads(result.stdout)
    assert [w["wave"] for w in waves] == [
        "baseline",
        "pilot",
        "validate",
        "claims",
        "application",
        "nim",
        "drain",
        "cutover",
    ]
    cutover = waves[-1]
    assert [m["moment"] for m in cutover["moments"]] == ["drain -> cutover: a100 drained", "cutover"]
    assert cutover["peakDemand"] == 6
    nim = next(w for w in waves if w["wave"] == "nim")["moments"][-1]
    # the inference tenant's template one-hopper is used by no declared workload: a note, not demand
    assert nim["demand"] == {"devicePlugin": 2, "dra": 6}
    assert any("inference/one-hopper" in note for note in waves[-1]["notes"])


def test_a_wave_that_does_not_fit_exits_1_and_names_the_workload(tmp_path: Path) -> None:
    stack = _short_spec(tmp_path)
    result = run("capacity", stack, "--wave", "base")
    assert result.exit_code == 1
    assert (
        "does not fit: workload team-a/big (spec.workloads[0]): 4 pod(s) x 4 nvidia.com/gpu" in result.stdout
    )


def test_bad_input_exits_2(tmp_path: Path) -> None:
    assert run("capacity", NIM_LAB, "--wave", "nope").exit_code == 2
    assert run("capacity", NIM_LAB, "--wave", "nim", "--all").exit_code == 2
    assert run("capacity", str(tmp_path / "missing.yaml")).exit_code == 2


def test_a_snapshot_adds_the_register_workloads(tmp_path: Path) -> None:
    cluster = healthy_cluster()
    # the model's unmigrated pods and the healthy cluster's trainer already hold device-plugin GPUs
    held = sum(
        int(c.get("resources", {}).get("limits", {}).get("nvidia.com/gpu", 0))
        for p in cluster.list("pods")
        for c in p["spec"]["containers"]
    )
    assert held > 2
    extra = [pod(f"batch-{i}", "ml", "gpu-legacy-01", gpus=8) for i in range(3)]
    cluster.kinds["pods"] = [*(cluster.kinds["pods"] or []), *extra]
    folder = cluster.write(tmp_path / "snap")
    stack = str(REPO / "stacks" / "reference.py")
    result = run(
        "capacity",
        stack,
        "--platform",
        "reference",
        "--wave",
        "baseline",
        "--snapshot",
        str(folder),
        "--format",
        "json",
    )
    assert result.exit_code == 1
    (reference,) = json.loads(result.stdout)
    first = reference["moments"][-1]["firstMisfit"]
    assert first["workload"].startswith("snapshot workload Pod ml/batch-")
    assert reference["moments"][-1]["demand"]["devicePlugin"] == 3 * 8 + held
    assert reference["counted"] == "the declared workloads and the snapshot's running GPU pods"


def test_without_a_snapshot_the_verdict_says_it_counted_only_the_declared_workloads() -> None:
    # a fitting wave too: "fits" must not read as "the running cluster fits"
    text = run("capacity", NIM_LAB, "--wave", "cutover")
    assert text.exit_code == 0
    line = next(x for x in text.stdout.splitlines() if x.startswith("  wave cutover: fits"))
    assert line.endswith(
        "counted only the declared workloads, not the tenants' running GPU pods (give --snapshot to count them)"
    )
    (cutover,) = json.loads(run("capacity", NIM_LAB, "--wave", "cutover", "--format", "json").stdout)
    assert cutover["counted"].startswith("only the declared workloads")


def test_check_warns_and_plan_prints_the_transition_verdict(tmp_path: Path) -> None:
    stack = _short_spec(tmp_path)
    checked = run("check", stack)
    assert "GP280 wave 'base' does not fit" in checked.stderr
    planned = run("plan", stack, "--from", "base", "--to", "pilot")
    assert "capacity: does not fit at base -> pilot: new drained" in planned.stdout
    assert "GP280" in run("explain", "GP280").stdout


def test_the_runbook_of_a_tight_or_short_wave_says_so() -> None:
    tight = platform([pool("old", 2)], [workload("train", 4, 4)])
    text = _runbooks(plan_platform(tight))["00-base.md"]
    assert "**Capacity: this wave is tight** (device plugin 16/16 in use at base)" in text
    short = platform([pool("old", 2)], [workload("train", 5, 4)])
    assert "**Capacity: this wave does not fit.**" in _runbooks(plan_platform(short))["00-base.md"]
    roomy = platform([pool("old", 2)], [workload("train", 1, 4)])
    assert "Capacity" not in _runbooks(plan_platform(roomy))["00-base.md"]


def _runbooks(plan: Plan) -> dict[str, str]:
    """The runbooks of `plan` with their capacity notes, as synth renders them."""
    return render_runbooks(plan, runbook_capacity_notes(plan))
