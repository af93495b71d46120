"""`simulate` judges a gate by the program the rendered tree ships, never by the gate's name.

Each case edits the tree (not the spec) the way a hand edit or a broken release would, and replays
the minimal lab's pilot transition on it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from gpuplatform.labels import GATE_LABEL
from gpuplatform.load.stacks import LoadedPlatform, load_stack
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.tree import Tree, render_tree
from gpuplatform.simulate.run import PlatformReport, prepare
from tests.simulate.helpers import sim_spec, violations
from tests.specs import write_spec

_PROGRAM = re.compile(r"^PROGRAM='.*?'\n(?=LOG_PODS=|T=\$\(mktemp)", re.S | re.M)


def _lab(tmp_path: Path) -> tuple[LoadedPlatform, Tree]:
    (loaded,) = load_stack(write_spec(tmp_path / "lab.yaml", sim_spec()))
    return loaded, render_tree(plan_platform(loaded.platform))


def _script(tree: Tree, gate: str) -> dict[str, Any]:
    """The programs ConfigMap of `delivery/gates/` (edited in place through the returned object)."""
    (path,) = [p for p in tree.files if p.startswith("delivery/gates/") and "gate-programs" in p]
    content = tree.files[path]
    assert isinstance(content, list)
    (configmap,) = content
    assert f"{gate}.sh" in configmap["data"]
    return dict(configmap)


def _set_program(tree: Tree, gate: str, program: str) -> None:
    data = _script(tree, gate)["data"]
    data[f"{gate}.sh"], count = _PROGRAM.subn(f"PROGRAM='{program}'\n", data[f"{gate}.sh"])
    assert count == 1


def _replay(loaded: LoadedPlatform, tree: Tree) -> PlatformReport:
    return prepare(loaded, "base", "pilot", ("argocd", "flux"), tree=tree).replay()


def test_the_lab_transition_holds_on_the_tree_as_rendered(tmp_path: Path) -> None:
    loaded, tree = _lab(tmp_path)
    report = _replay(loaded, tree)
    assert violations(report) == []
    assert not any("runs no gate program" in n for r in report.results for n in r.notes)


def test_a_program_edited_in_the_tree_is_the_verdict(tmp_path: Path) -> None:
    # GIVEN the shipped inventory program replaced by one that always finds a violation
    loaded, tree = _lab(tmp_path)
    _set_program(tree, "inventory", '"violation: edited in the tree"')
    # THEN every engine's sync waits on the inventory gate with the edited program's words
    found = violations(_replay(loaded, tree), late=False)
    assert {engine for engine, *_ in found} == {"argocd", "flux"}
    assert all(v.invariant == "sync-completes" and "edited in the tree" in v.message for *_, v in found)


def test_a_program_that_does_not_compile_never_holds(tmp_path: Path) -> None:
    loaded, tree = _lab(tmp_path)
    _set_program(tree, "rollback-safety", "def broken: ;")
    found = violations(_replay(loaded, tree), late=False)
    assert found and all("verdict program of gate rollback-safety failed" in v.message for *_, v in found)


def test_a_gate_job_that_runs_true_checks_nothing_and_says_so(tmp_path: Path) -> None:
    # GIVEN the pilot wave's inventory Job running `sh -c true` instead of its script, and the
    # program behind it broken: the Job never reads the program
    loaded, tree = _lab(tmp_path)
    _set_program(tree, "inventory", '"violation: never read"')
    edited = 0
    for path, content in tree.files.items():
        if not path.startswith("waves/") or not isinstance(content, list):
            continue
        for obj in content:
            if (
                obj.get("kind") == "Job"
                and (obj["metadata"].get("labels") or {}).get(GATE_LABEL) == "inventory"
            ):
                obj["spec"]["template"]["spec"]["containers"][0]["command"] = ["sh", "-c", "true"]
                edited += 1
    assert edited
    report = _replay(loaded, tree)
    # THEN the Job finishes at once, as `true` would, and the replay says it judged nothing
    assert violations(report) == []
    assert any("runs no gate program" in n for r in report.results for n in r.notes)


def test_facts_edited_out_of_shape_are_read_as_they_are(tmp_path: Path) -> None:
    # GIVEN the pilot wave's inventory facts with a pool that is no object
    loaded, tree = _lab(tmp_path)
    edited = 0
    for path, content in tree.files.items():
        if path.startswith("waves/01-pilot/") and isinstance(content, list):
            for obj in content:
                if (
                    obj.get("kind") == "ConfigMap"
                    and (obj["metadata"].get("labels") or {}).get(GATE_LABEL) == "inventory"
                ):
                    obj["data"]["data.json"] = '{"pools": [7], "driver": "gpu.nvidia.com"}'
                    edited += 1
    assert edited == 1
    # THEN the replay says what the program says of them, never a traceback
    found = violations(_replay(loaded, tree), late=False)
    assert found and all("inventory" in v.message for *_, v in found)
