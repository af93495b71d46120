"""`gpuplatform simulate` end to end: exit 0 with what was proven, 1 with the first violation, 2 on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from gpuplatform.cli import main
from gpuplatform.render import operators
from tests.simulate.helpers import sim_spec
from tests.specs import write_spec


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def test_a_proven_transition_exits_0_and_says_what_was_proven(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "lab.yaml", sim_spec())
    result = run("simulate", str(spec), "--from", "base", "--to", "pilot", "--engine", "flux")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "platform lab (flux)"
    assert lines[1].startswith("  flux   base -> pilot: ") and lines[1].endswith("steps, ok")
    assert "(operator late)" in lines[2]
    assert lines[-1].startswith("2 of 2 transition replays proven, ")


def test_a_violation_exits_1_naming_the_step_the_invariant_and_the_objects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(operators, "chart_class_patches", lambda plan, state: [])
    spec = write_spec(tmp_path / "lab.yaml", sim_spec())
    result = run("simulate", str(spec), "--from", "claims", "--to", "cutover")
    assert result.exit_code == 1
    text = result.stdout
    # the upgrade controller deletes the legacy pods of a legacy node for its driver upgrade (base -> pilot)
    assert "first violation: argocd, base -> pilot" in text
    assert "  invariant early-bridge: unmigrated gpu-legacy/legacy-tolerates-all" in text
    assert "objects: Pod/gpu-legacy/legacy-tolerates-all, DeviceClass/gpu.nvidia.com" in text
    assert "the steps before it:" in text


def test_json_lists_every_replay(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "lab.yaml", sim_spec())
    result = run("simulate", str(spec), "--all", "--format", "json")
    assert result.exit_code == 0, result.output
    [report] = json.loads(result.stdout)
    assert report["engines"] == ["argocd", "flux"]
    assert report["proven"] == len(report["transitions"]) > 10
    assert {t["violation"] for t in report["transitions"]} == {None}


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--from", "base"), "give both --from WAVE and --to WAVE"),
        (("--from", "nope", "--to", "base"), "has no wave 'nope'"),
        (("--all", "--from", "base", "--to", "pilot"), "--all replays every transition"),
    ],
)
def test_bad_input_exits_2(tmp_path: Path, args: tuple[str, ...], fragment: str) -> None:
    spec = write_spec(tmp_path / "lab.yaml", sim_spec())
    result = run("simulate", str(spec), *args)
    assert result.exit_code == 2 and fragment in result.stderr and result.stdout == ""


def test_an_engine_the_platform_does_not_render_is_skipped(tmp_path: Path) -> None:
    doc = sim_spec()
    doc["spec"]["delivery"]["engines"] = ["flux"]
    result = run("simulate", str(write_spec(tmp_path / "lab.yaml", doc)), "--from", "base", "--to", "pilot")
    assert result.exit_code == 0 and "skipped: engine argocd: not rendered for this platform" in result.stdout


def _pod(name: str, node: str, **spec: object) -> dict[str, object]:
    container = {"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    return {
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"nodeName": node, "containers": [container], **spec},
        "status": {"phase": "Running"},
    }


def test_a_snapshots_gpu_pods_are_the_workload_mix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a cluster whose pod on the legacy node tolerates every taint, and one pod with a claim
    pods = {
        "items": [
            _pod("trainer", "gpu-01", tolerations=[{"operator": "Exists"}]),
            _pod("claimed", "gpu-02", resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "t"}]),
        ]
    }
    (tmp_path / "pods.json").write_text(json.dumps(pods))
    monkeypatch.setattr(operators, "chart_class_patches", lambda plan, state: [])
    spec = write_spec(tmp_path / "lab.yaml", sim_spec())
    # WHEN the cutover drains it and the chart's class still bridges
    result = run(
        "simulate",
        str(spec),
        "--from",
        "claims",
        "--to",
        "cutover",
        "--snapshot",
        str(tmp_path / "pods.json"),
    )
    # THEN the snapshot's pod is the one that lands on a DRA node; the claim pod is said to be left out
    assert result.exit_code == 1
    assert "invariant early-bridge: unmigrated ml/trainer" in result.stdout
    assert "skipped: pod ml/claimed (resource claims are not taken from snapshots)" in result.stdout


def test_a_missing_snapshot_is_bad_input(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "lab.yaml", sim_spec())
    result = run("simulate", str(spec), "--snapshot", str(tmp_path / "nope"))
    assert result.exit_code == 2 and "nope" in result.stderr


@pytest.mark.parametrize(("engines", "asked"), [(["argocd"], "flux"), (["flux"], "argocd")])
def test_an_engine_the_platform_does_not_render_is_bad_input_not_zero_of_zero(
    tmp_path: Path, engines: list[str], asked: str
) -> None:
    # GIVEN a spec that renders only one engine's entry points
    doc = sim_spec()
    doc["spec"]["delivery"]["engines"] = engines
    spec = write_spec(tmp_path / "lab.yaml", doc)
    # WHEN the other engine is simulated / THEN it is refused, not proven "0 of 0"
    result = run("simulate", str(spec), "--engine", asked)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: --engine: platform 'lab' renders no {asked} entry points")
    assert "0 of 0" not in result.stdout
