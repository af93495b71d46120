"""Edits to the rendered tree, not to the source, that break a real cluster: the rehearsal must fail
each, where `simulate` (which never runs the programs) proved them all."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import yaml

from gpuplatform.rehearse.assets import Assets
from gpuplatform.simulate.run import PlatformReport
from tests.conftest import REPO
from tests.rehearse.conftest import FOUR_NODES, rehearse_tree


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
