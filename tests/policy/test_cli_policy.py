"""`gpuplatform check`, `explain`, `plan --from/--to` and `synth --allow` end to end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from gpuplatform.cli import main
from gpuplatform.policy.explain import CHECK_CODES
from gpuplatform.policy.rules import RULES
from tests.conftest import REPO
from tests.specs import minimal_spec, write_spec

REFERENCE = str(REPO / "stacks" / "reference.py")


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def _two_bridges(tmp_path: Path) -> Path:
    """A spec with two platform bridges for nvidia.com/gpu (GP120, an error)."""
    doc = minimal_spec()
    doc["spec"]["bridges"] = [{"name": "a"}, {"name": "b"}]
    doc["spec"]["waves"].insert(3, {"name": "bridge", "stage": "compatibility-bridge", "bridges": ["a", "b"]})
    return write_spec(tmp_path / "lab.yaml", doc)


def test_check_reference_prints_the_table_and_exits_0_clean() -> None:
    result = run("check", REFERENCE)
    assert result.exit_code == 0, result.stderr
    header = result.stdout.splitlines()[1].split()
    assert header == ["KIND", "NAME", "DEVICES", "dra-pilot", "legacy", "BEST", "NODE", "INVENTORY"]
    assert (
        "tier           nvidia-hopper-large-memory      16       8          8       8          -"
        in result.stdout
    )
    assert "GP121" not in result.stderr  # the chart's class no longer claims nvidia.com/gpu
    # the reference stack names the chart's class as its bridge (no GP121) and pins its images (no GP230)
    assert result.stderr == "0 error(s), 0 warning(s)\n"


def test_check_json_is_machine_readable_and_exit_1_on_errors(tmp_path: Path) -> None:
    result = run("check", str(_two_bridges(tmp_path)), "--format", "json")
    assert result.exit_code == 1
    (report,) = json.loads(result.stdout)
    assert report["platform"] == "lab"
    assert {s["kind"] for s in report["selectors"]} == {"tier", "bridge", "claimTemplate"}
    gp120 = [p for p in report["problems"] if p["code"] == "GP120"]
    assert gp120 and set(gp120[0]) == {"severity", "file", "loc", "code", "message", "hint"}


def test_check_snapshot_reports_missing_nodes(tmp_path: Path) -> None:
    # GIVEN a snapshot whose cluster lacks gpu-02
    snapshot = tmp_path / "snap"
    snapshot.mkdir()
    nodes = {"apiVersion": "v1", "kind": "List", "items": [{"metadata": {"name": "gpu-01"}}]}
    (snapshot / "nodes.json").write_text(json.dumps(nodes))
    spec = write_spec(tmp_path / "lab.yaml", minimal_spec())
    # WHEN / THEN check names the node at its spec path and exits 1
    result = run("check", str(spec), "--snapshot", str(snapshot))
    assert result.exit_code == 1
    assert f"error: {spec}:spec.nodePools[1].nodes[0]: GP190 node 'gpu-02' does not exist" in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("check", "missing.yaml"),
        ("check", REFERENCE, "--snapshot", "/nonexistent"),
        ("check", REFERENCE, "--inventory", "/nonexistent.yaml"),
    ],
    ids=["missing-stack", "missing-snapshot", "missing-inventory"],
)
def test_check_bad_input_exits_2(args: tuple[str, ...]) -> None:
    result = run(*args)
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ") and "Traceback" not in result.output


def test_explain_every_code_and_refuse_unknown_ones() -> None:
    for code in [*RULES, *CHECK_CODES]:
        result = run("explain", code.lower())
        assert result.exit_code == 0
        assert result.stdout.startswith(f"{code} (")
        assert len(result.stdout.splitlines()) >= 3
    unknown = run("explain", "GP999")
    assert unknown.exit_code == 2 and "no rule 'GP999'" in unknown.stderr


def test_synth_refuses_error_findings_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run("synth", str(_two_bridges(tmp_path)), "--out", str(out))
    assert result.exit_code == 1
    assert "GP120" in result.stderr and "--allow CODE" in result.stderr
    assert not out.exists()


def test_synth_allow_overrides_the_code_and_records_it_in_the_lock(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run("synth", str(_two_bridges(tmp_path)), "--out", str(out), "--allow", "GP120")
    assert result.exit_code == 0, result.stderr
    assert "GP120" in result.stderr  # still shown, as an accepted finding
    assert "error:" not in result.stderr
    assert (
        "warning: " in result.stderr
        and "(allowed with --allow GP120, recorded in the lock file)" in result.stderr
    )
    lock: dict[str, Any] = json.loads((out / "lab" / "gpuplatform.lock.json").read_text())
    assert lock["overrides"] == ["GP120"]


def test_synth_allow_of_another_code_does_not_override(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run("synth", str(_two_bridges(tmp_path)), "--out", str(out), "--allow", "GP101").exit_code == 1
    assert not out.exists()


def test_plan_transition_rollback_of_the_reference() -> None:
    result = run("plan", REFERENCE, "--from", "native-claim-pilot", "--to", "driver-validation")
    assert result.exit_code == 0, result.stderr
    first = result.stdout.split("\n\n")[0]
    assert first.splitlines()[0] == "platform reference: native-claim-pilot -> driver-validation (rollback)"
    assert "  - tenant gpu-dra-pilot" in first
    order = first.split("steps (")[1].split("gates of")[0]
    assert order.index("release-claims") < order.index("merge") < order.index("40-tenants")
    assert "10-nodes" not in order
    assert "  rollback-safety (before 00-operators, 10-nodes): " in first
    assert "REFUSED" not in first


def test_plan_transition_that_jumps_over_node_moves_and_claims_is_refused() -> None:
    result = run("plan", REFERENCE, "--from", "final-cutover", "--to", "baseline", "--format", "json")
    assert result.exit_code == 1
    reports = json.loads(result.stdout)
    assert reports[0]["direction"] == "rollback"
    assert any("step through the waves in between" in r for r in reports[0]["refused"])
    assert [s["layer"] for s in reports[0]["applyOrder"]][:4] == [
        "50-gates/pre",
        "15-allocator-switch/release",
        "00-operators",
        "10-nodes",
    ]


@pytest.mark.parametrize(
    ("args", "fragment"),
    [(("--from", "baseline"), "give both"), (("--from", "nope", "--to", "baseline"), "has no wave 'nope'")],
)
def test_plan_transition_bad_input(args: tuple[str, ...], fragment: str) -> None:
    result = run("plan", REFERENCE, *args)
    assert result.exit_code == 2 and fragment in result.stderr


@pytest.mark.parametrize(
    "nodes",
    ['{"items": [{"metadata": [1]}]}', '{"items": [{"metadata": {"name": 5}}]}', '{"items": "x"}', "[1, 2]"],
    ids=["metadata-list", "name-int", "items-string", "list"],
)
def test_check_malformed_snapshot_is_bad_input(tmp_path: Path, nodes: str) -> None:
    (tmp_path / "nodes.json").write_text(nodes)
    result = run("check", REFERENCE, "--snapshot", str(tmp_path))
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: {tmp_path / 'nodes.json'}:items")


def test_synth_allow_of_an_unknown_code_is_bad_input(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run("synth", str(_two_bridges(tmp_path)), "--out", str(out), "--allow", "GP12O")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: --allow: no rule GP12O")
    assert not out.exists()


def test_the_projects_own_stacks_render_without_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the README's first command renders every stack in stacks/; it must not warn about our own stacks
    monkeypatch.chdir(REPO)
    result = run("synth", "--out", str(tmp_path / "out"))
    assert result.exit_code == 0, result.stderr
    # notes only (the --out note, what quota.legacyWorkloads adds): no warning, no error
    assert {line.split(":", 1)[0] for line in result.stderr.splitlines() if not line.startswith(" ")} == {
        "info"
    }
