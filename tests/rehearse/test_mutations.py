"""Edits to the rendered tree, not to the source, that break a real cluster: the rehearsal must fail
each, where `simulate` (which never runs the programs) proved them all."""

from __future__ import annotations

import copy
import shutil
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path

import yaml

from gpuplatform.load.stacks import load_stack
from gpuplatform.plan.waves import WaveState, plan_platform
from gpuplatform.rehearse.assets import Assets
from gpuplatform.rehearse.cluster import Rehearsal
from gpuplatform.rehearse.crds import read_crds
from gpuplatform.rehearse.run import read_tree
from gpuplatform.rehearse.upstream import platform_crd_folders
from gpuplatform.rehearse.walk import Walker
from gpuplatform.simulate.run import PlatformReport
from tests.conftest import REPO
from tests.rehearse.conftest import FOUR_NODES, rehearse_tree, synth_tree


def _edit(folder: Path, pattern: str, change: Callable[[dict[str, object]], None]) -> None:
    """Apply `change` to the one object of the one file matching `pattern` under `folder`."""
    [path] = sorted(folder.glob(pattern))
    obj = yaml.safe_load(path.read_text())
    change(obj)
    path.write_text(yaml.safe_dump(obj, sort_keys=False))


def _script(obj: dict[str, object]) -> list[str]:
    command: list[str] = obj["spec"]["template"]["spec"]["containers"][0]["command"]  # type: ignore[index]
    return command


def _violation(report: PlatformReport) -> str:
    failed = [r for r in report.results if r.violation is not None]
    assert failed, f"the mutated tree was proven: {[(r.source, r.target) for r in report.results]}"
    violation = failed[0].violation
    assert violation is not None
    return violation.invariant


def test_a_gate_whose_command_is_true_fails_the_rehearsal(
    tmp_path: Path, assets_136: Assets, crds: Path | None
) -> None:
    tree = tmp_path / "reference"
    shutil.copytree(REPO / "dist" / "reference", tree)

    def true(obj: dict[str, object]) -> None:
        _script(obj)[:] = ["sh", "-c", "true"]

    _edit(tree, "waves/01-pilot-pool/50-gates/post/job_*gate-inventory-*.yaml", true)
    report = rehearse_tree(REPO / "stacks" / "reference.py", tree, "baseline", "pilot-pool", assets_136, crds)
    assert _violation(report) == "gate-blind"


def _release(tree: Path, change: Callable[[list[str]], None]) -> None:
    _edit(
        tree,
        "waves/01-pilot/15-allocator-switch/release/job_*switch-release-*.yaml",
        lambda o: change(_script(o)),
    )


def test_a_release_job_naming_one_node_of_a_four_node_pool_fails(
    tmp_path: Path, four_nodes: Path, assets_136: Assets, crds: Path | None
) -> None:
    tree = tmp_path / four_nodes.name
    shutil.copytree(four_nodes, tree)

    def one_node(command: list[str]) -> None:
        lines = command[2].splitlines()
        [i] = [n for n, line in enumerate(lines) if line.startswith("NODES=")]
        assert "lab-pilot-04" in lines[i]
        lines[i] = "NODES='lab-legacy-01 lab-pilot-01'"
        command[2] = "\n".join(lines) + "\n"

    _release(tree, one_node)
    report = rehearse_tree(FOUR_NODES, tree, "second", "pilot", assets_136, crds)
    assert _violation(report) == "one-allocator"


def test_a_switch_that_stops_waiting_fails(
    tmp_path: Path, four_nodes: Path, assets_136: Assets, crds: Path | None
) -> None:
    tree = tmp_path / four_nodes.name
    shutil.copytree(four_nodes, tree)

    def no_wait(command: list[str]) -> None:
        assert "  sleep 10\ndone" in command[2]
        command[2] = command[2].replace("  sleep 10\ndone", "  break\ndone")

    _release(tree, no_wait)
    report = rehearse_tree(FOUR_NODES, tree, "second", "pilot", assets_136, crds)
    assert _violation(report) == "one-allocator"


def test_the_untouched_four_node_tree_is_proven(
    four_nodes: Path, assets_136: Assets, crds: Path | None
) -> None:
    """The control: the same transitions with the tree as synth wrote it."""
    report = rehearse_tree(FOUR_NODES, four_nodes, "second", "pilot", assets_136, crds)
    assert [(r.source, r.target, r.violation) for r in report.results] == [("second", "pilot", None)]


CORDON_ROLLBACK = Path(__file__).parent / "stacks" / "cordon-rollback.yaml"


def _without_rollback_cordon(runbook: Path) -> None:
    """Remove the item `Cordon the nodes that go back to the device plugin.`, its sub-items and blocks."""
    lines = runbook.read_text().splitlines(keepends=True)
    [start] = [
        i
        for i, line in enumerate(lines)
        if line.endswith(". Cordon the nodes that go back to the device plugin.\n")
    ]
    end = next(i for i in range(start + 1, len(lines)) if lines[i][:1].isdigit())
    assert "kubectl cordon" in "".join(lines[start:end])
    runbook.write_text("".join(lines[:start] + lines[end:]))


def _spread_claims(walker: Walker, state: WaveState) -> list[str]:
    """The tenant scales out: four more pods of its claim template, placed by the scheduler over the
    DRA pools (it spreads them); the nodes their pods run on."""
    [deployment] = walker.owners.claim_workloads(state)
    batch = copy.deepcopy(deployment)
    meta, namespace = batch["metadata"], deployment["metadata"]["namespace"]
    walker.cluster.delete("Deployment", f"{meta['name']}-batch", namespace, wait=True)
    meta["name"] = f"{meta['name']}-batch"
    batch["spec"]["replicas"] = 4
    walker.cluster.apply([batch], "tenant")
    walker.cluster.settle()
    pods = walker.cluster.client.list("Pod", namespace)
    return sorted(
        str(p["spec"].get("nodeName"))
        for p in pods
        if p["metadata"]["name"].startswith(meta["name"]) and not p["metadata"].get("deletionTimestamp")
    )


def test_a_rollback_without_its_cordon_fails(tmp_path: Path, assets_136: Assets, crds: Path | None) -> None:
    """Rolling `cutover` back moves the tenant's claim pods off the pool that goes back: cordoned
    first (the tree as written), their controller's new pods land on the pool that stays; without the
    cordon some land back, and the runbook's check finds their claims there."""
    tree = synth_tree(CORDON_ROLLBACK, tmp_path / "synth")
    mutated = tmp_path / "mutated" / tree.name
    shutil.copytree(tree, mutated)
    _without_rollback_cordon(mutated / "runbooks" / "04-cutover.md")
    [loaded] = load_stack(CORDON_ROLLBACK)
    plan = plan_platform(loaded.platform)
    claims, cutover = plan.wave("claims"), plan.wave("cutover")
    folders = [crds] if crds is not None else platform_crd_folders(loaded.platform)
    with Rehearsal(plan, assets_136) as cluster:
        walker = Walker(
            cluster, plan, read_tree(tree, tree.name), tree, "flux", str(CORDON_ROLLBACK), read_crds(folders)
        )
        walk = [walker.bootstrap()]
        walk += [walker.transition(a, b) for a, b in pairwise(plan.waves)]
        assert [r.violation for r in walk] == [None] * len(walk)
        assert "lab-rest" in " ".join(_spread_claims(walker, cutover))
        assert walker.transition(cutover, claims).violation is None  # the control: the tree as written
        assert walker.transition(claims, cutover).violation is None
        assert "lab-rest" in " ".join(_spread_claims(walker, cutover))
        walker.tree_dir = mutated
        result = walker.transition(cutover, claims)
    assert result.violation is not None, "the rollback without its cordon was proven"
    assert result.violation.invariant == "runbook"
    assert "a check that must print nothing printed: lab/" in result.violation.message
