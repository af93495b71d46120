"""The emulated GKE: what the fake `gcloud` answers, and a GKE fleet moved by its node pools on a
real control plane, its runbooks' `gcloud` commands carried out."""

from __future__ import annotations

import json
import shutil
import threading
from itertools import pairwise
from pathlib import Path

import pytest

from gpuplatform.load.stacks import load_stack
from gpuplatform.plan.waves import plan_platform
from gpuplatform.rehearse.assets import Assets
from gpuplatform.rehearse.cluster import Rehearsal
from gpuplatform.rehearse.crds import read_crds
from gpuplatform.rehearse.fakes import main
from gpuplatform.rehearse.gke import GkeNodePools
from gpuplatform.rehearse.run import read_tree
from gpuplatform.rehearse.upstream import platform_crd_folders
from gpuplatform.rehearse.walk import Walker
from tests.rehearse.conftest import synth_tree

GKE_TAKEOVER = Path(__file__).parent / "stacks" / "gke-takeover.yaml"
WHERE = ["--project=p", "--cluster=c", "--location=us-central1"]


@pytest.fixture
def gke_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("REHEARSAL_STATE", str(tmp_path))
    (tmp_path / "gke" / "requests").mkdir(parents=True)
    (tmp_path / "gke" / "pools.json").write_text(
        json.dumps({"l4": {"name": "l4", "locations": ["us-central1-a"]}})
    )
    return tmp_path / "gke"


def test_describe_prints_the_pool_the_api_has(gke_state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gcloud", "container", "node-pools", "describe", "l4", *WHERE, "--format=json"]) == 0
    assert json.loads(capsys.readouterr().out)["locations"] == ["us-central1-a"]
    assert main(["gcloud", "container", "node-pools", "describe", "gone", *WHERE, "--format=json"]) == 1
    assert "code=404" in capsys.readouterr().err


def test_a_change_waits_for_the_controllers_answer(
    gke_state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """gcloud waits for its operation: the fake returns only once the controller answered."""
    answered: list[list[str]] = []

    def controller() -> None:
        while not (requests := sorted((gke_state / "requests").glob("*.json"))):
            pass
        answered.append(json.loads(requests[0].read_text()))
        partial = requests[0].with_suffix(".partial")  # replaced whole, as the controller answers
        partial.write_text(json.dumps({"code": 1, "stderr": "ERROR: refused"}))
        partial.replace(requests[0].with_suffix(".answer"))
        requests[0].unlink()

    thread = threading.Thread(target=controller)
    thread.start()
    code = main(["gcloud", "container", "node-pools", "delete", "l4", *WHERE, "--quiet"])
    thread.join()
    assert code == 1 and "ERROR: refused" in capsys.readouterr().err
    assert answered == [["container", "node-pools", "delete", "l4", *WHERE, "--quiet"]]
    assert not list((gke_state / "requests").iterdir())


def _pools(walker: Walker) -> dict[str, dict[str, tuple[str, list[str]]]]:
    """GKE node pool -> its nodes: name -> (their mode label, their taints' keys)."""
    out: dict[str, dict[str, tuple[str, list[str]]]] = {}
    for n in walker.cluster.client.list("Node"):
        labels = n["metadata"]["labels"]
        if "cloud.google.com/gke-nodepool" in labels:
            out.setdefault(labels["cloud.google.com/gke-nodepool"], {})[n["metadata"]["name"]] = (
                labels.get("gpu-scheduling.lab.example.com/mode", ""),
                sorted(t["key"] for t in n["spec"].get("taints") or []),
            )
    return out


def _without_pool_delete(runbook: Path) -> None:
    """The rollback's `gcloud container node-pools delete` turned into a no-op."""
    text = runbook.read_text()
    assert "gcloud container node-pools delete l4-dra" in text
    runbook.write_text(text.replace("gcloud container node-pools delete l4-dra", "true"))


def test_the_runbooks_gcloud_commands_move_the_node_pools(
    tmp_path: Path, assets_136: Assets, crds: Path | None
) -> None:
    """`pilot` creates `l4-dra` from `l4` and shrinks `l4`; `scale` relabels and taints `l4`'s nodes
    in place; each rollback undoes it. Without the rollback's pool delete, its check fails."""
    tree = synth_tree(GKE_TAKEOVER, tmp_path / "synth")
    mutated = tmp_path / "mutated" / tree.name
    shutil.copytree(tree, mutated)
    _without_pool_delete(mutated / "runbooks" / "01-pilot.md")
    [loaded] = load_stack(GKE_TAKEOVER)
    plan = plan_platform(loaded.platform)
    folders = [crds] if crds is not None else platform_crd_folders(loaded.platform)
    taint = "gpu-scheduling.lab.example.com/mode"
    with Rehearsal(plan, assets_136) as cluster:
        walker = Walker(
            cluster, plan, read_tree(tree, tree.name), tree, "flux", str(GKE_TAKEOVER), read_crds(folders)
        )
        assert walker.bootstrap().violation is None
        assert _pools(walker) == {"l4": {"l4-node-0": ("", []), "l4-node-1": ("", [])}}
        seen = []
        for a, b in pairwise(plan.waves):
            assert walker.transition(a, b).violation is None
            seen.append(_pools(walker))
        baseline, pilot, validate, scale = plan.waves
        assert walker.transition(scale, validate).violation is None
        back = _pools(walker)
        assert walker.transition(validate, pilot).violation is None
        assert walker.transition(pilot, baseline).violation is None
        first = _pools(walker)
        assert walker.transition(baseline, pilot).violation is None
        walker.tree_dir = mutated
        result = walker.transition(pilot, baseline)
    (l4_left,) = seen[0]["l4"]
    assert seen[0]["l4-dra"] == {"l4-dra-node-0": ("dra", [taint])}
    assert seen[2]["l4"] == {l4_left: ("dra", [taint])}, "scale relabels the node in place"
    assert back["l4"] == {l4_left: ("legacy", [])}
    assert sorted(first) == ["l4"] and len(first["l4"]) == 2
    assert result.violation is not None, "a rollback that never deletes its node pool was proven"
    assert result.violation.invariant == "runbook"
    assert "nodes of node group l4-dra remain" in result.violation.message


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (
            ["container", "node-pools", "frobnicate", "l4"],
            "does not know `gcloud container node-pools frobnicate`",
        ),
        (["container", "node-pools", "create"], "ERROR: (gcloud.container)"),
        (["container", "node-pools", "delete", "gone"], "code=404"),
    ],
)
def test_a_command_gke_refuses_is_answered_not_crashed_on(
    tmp_path: Path, args: list[str], error: str
) -> None:
    """A mutated or hostile runbook's gcloud call fails as gcloud does; the rehearsal's loop goes on."""
    (tmp_path / "requests").mkdir()
    request = tmp_path / "requests" / "1.json"
    request.write_text(json.dumps(args))
    gke = GkeNodePools(cluster=None, plan=None, folder=tmp_path)  # type: ignore[arg-type]
    assert gke.reconcile()
    answer = json.loads(request.with_suffix(".answer").read_text())
    assert answer["code"] == 1 and error in answer["stderr"]
    assert not request.exists() and gke.operation is None
