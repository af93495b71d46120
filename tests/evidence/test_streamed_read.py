"""`evidence` reads Pods and Nodes a batch at a time, projected as read: same verdicts, same errors."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuplatform.cli import main
from gpuplatform.errors import InputError
from gpuplatform.evidence.evaluate import evaluate_wave
from gpuplatform.load import json_list
from gpuplatform.load.stacks import load_stack
from gpuplatform.load.yaml_input import read_data
from gpuplatform.plan.waves import plan_platform
from gpuplatform.snapshot.project import projector
from gpuplatform.snapshot.read import KINDS, Snapshot, load_snapshot
from gpuplatform.snapshot.shapes import check_items
from tests.conftest import REPO
from tests.gates.test_projection import (
    Kinds,
    _device_plugin_on_a_dra_node,
    _healthy,
    _odd_shapes,
    _terminating_claim_holder,
    _unready_operand,
)
from tests.specs import healthy_cluster

STACK = str(REPO / "stacks" / "reference.py")


def _pathological(kinds: Kinds) -> None:
    """Values a parser must carry through untouched: escapes, a huge string, deep nesting, numbers."""
    pods = kinds["pods"]
    pods[0]["metadata"]["labels"]["note"] = '\u00e9\U0001f600\\"}, {"metadata": ' + "x" * 3_000_000
    pods[1]["metadata"]["annotations"] = {"deep": json.loads("[" * 200 + "]" * 200)}
    pods[2]["status"]["containerStatuses"][0]["restartCount"] = 2**63 - 1


@pytest.mark.parametrize(
    "breaks",
    [
        _healthy,
        _unready_operand,
        _terminating_claim_holder,
        _device_plugin_on_a_dra_node,
        _pathological,
    ],
)
def test_evidence_says_the_same_on_pods_and_nodes_projected_as_read(
    breaks: Callable[[Kinds], None], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the fleet's snapshot at its final cutover, broken on request, written as `snapshot` does
    monkeypatch.setenv("FLEET_NODES", "40")
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    monkeypatch.setattr(json_list, "_BLOCK", 1 << 16)
    import fleet_snapshot

    kinds, logs = fleet_snapshot.build("final-cutover")
    breaks(kinds)
    for kind, items in kinds.items():
        body = {"apiVersion": "v1", "kind": "List", "items": items}
        (tmp_path / f"{kind}.json").write_text(json.dumps(body, indent=2))
    (loaded,) = load_stack(REPO / "benchmarks" / "fleet.py")
    plan = plan_platform(loaded.platform)
    state = plan.wave("final-cutover")
    # WHEN the gates judge it read as evidence reads it, and read whole as before
    streamed = load_snapshot(tmp_path)
    streamed.logs = logs
    whole = Snapshot(
        tmp_path, {k: read_data(tmp_path / f"{k}.json")["items"] for k in KINDS if k in kinds}, logs=logs
    )
    # THEN the same verdicts, with Pods and Nodes kept as they were read
    alike = [r.as_dict() for r in evaluate_wave(plan, state, streamed)]
    assert alike == [r.as_dict() for r in evaluate_wave(plan, state, whole)]
    assert streamed.kept == {"nodes", "pods"}
    assert all(json_list.read_list_items(tmp_path / f"{kind}.json") is not None for kind in kinds)
    if breaks is _healthy:
        assert all(r["status"] == "held" for r in alike)


@pytest.mark.parametrize(
    "text",
    [
        b'{"items": [{"metadata": {"name": "a"}}, {"metadata": {"name": }}]}',
        b'{"items": [{"metadata": {"name": "a"}}',
        b'{"items": [{"metadata": {"name": "a", "name": "b"}}]}',
        b'{"items": [{"metadata": {"name": "\xff"}}]}',
        b'{"items": [1]}',
        b'{"items": {"metadata": {}}}',
        b'{"kind": "List"}',
        b'{"items": [{"deep": ' + b"[" * 5000 + b"]" * 5000 + b"}]}",
    ],
    ids=[
        "malformed",
        "cut-short",
        "duplicate-key",
        "not-utf8",
        "not-objects",
        "not-a-list",
        "no-items",
        "deep",
    ],
)
def test_a_pods_file_evidence_cannot_read_is_refused_as_before(text: bytes, tmp_path: Path) -> None:
    # GIVEN a healthy snapshot whose pods.json is broken
    folder = healthy_cluster().write(tmp_path / "snap")
    pods = folder / "pods.json"
    pods.write_bytes(text)
    # WHEN evidence reads it
    args = ["evidence", STACK, "--platform", "reference", "--wave", "native-claim-pilot"]
    result = CliRunner().invoke(main, [*args, "--snapshot", str(folder)])
    # THEN exit 2 with the line the whole read gives, naming the file and the field
    assert result.exit_code == 2, result.output
    assert result.stderr == _refusal(pods) + "\n"
    assert result.stderr.startswith(f"error: {pods}:")


def _refusal(path: Path) -> str:
    """The error line of the snapshot reader before it streamed."""
    try:
        read_data(path)
    except InputError as exc:
        return exc.problems[0].line()
    return f"error: {path}:items: expected `kubectl get -o json` output (a List of objects)"


def test_shapes_the_api_never_serves_are_refused_alike_streamed_and_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`snapshot/shapes.py` refuses a field of a type the API never serves (exit 2, its item); the
    streamed read refuses what the whole read refuses, with the same line."""
    monkeypatch.setenv("FLEET_NODES", "40")
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    import fleet_snapshot

    kinds, _ = fleet_snapshot.build("final-cutover")
    _odd_shapes(kinds)
    path = tmp_path / "pods.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": kinds["pods"]}))
    lines = []
    for block in (1 << 12, 8 << 20):
        monkeypatch.setattr(json_list, "_BLOCK", block)
        with pytest.raises(InputError) as refused:
            load_snapshot(tmp_path).items("pods", projector("pods"))
        lines.append(refused.value.problems[0].line())
    with pytest.raises(InputError) as whole:
        check_items("pods", read_data(path)["items"], str(path))
    assert lines == [whole.value.problems[0].line()] * 2
