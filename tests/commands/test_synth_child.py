"""synth with its forked children (rules, runbook capacity notes and the hand-offs' files computed
while the parent serialises the waves; runbooks and lock files while it stages them) writes and
refuses exactly as a plain run."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gpuplatform import background
from gpuplatform.commands import synth
from gpuplatform.commands.synth import PolicyRefusal, synth_tree
from gpuplatform.errors import Problem
from gpuplatform.load.stacks import load_stack
from gpuplatform.output.serialize import RenderedOutputInvalid
from gpuplatform.render.tree import Tree
from tests.conftest import REPO
from tests.forks import count_forks
from tests.specs import minimal_spec, write_spec

pytestmark = [
    pytest.mark.skipif(not background.can_fork(), reason="needs fork and two cores"),
    pytest.mark.usefixtures("cli_runtime"),
]


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_the_child_changes_no_byte_of_the_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a stack with hand-offs, workloads and runbook capacity notes
    loaded = load_stack(REPO / "stacks" / "mixed-fleet.yaml")
    monkeypatch.setenv("GPUPLATFORM_CACHE_DIR", str(tmp_path / "cache"))
    # WHEN it is written with the child and without
    forked = count_forks(monkeypatch)
    synth_tree(loaded, tmp_path / "child")
    assert len(forked) == 3, (
        "synth forks for the simulation verdict, for the rules and the hand-offs, then for the runbooks and locks"
    )
    monkeypatch.setattr(background, "can_fork", lambda: False)
    synth_tree(loaded, tmp_path / "plain")
    # THEN every file is the same, hand-offs, runbooks and the overview included
    child, plain = _files(tmp_path / "child"), _files(tmp_path / "plain")
    assert any("/handoff/" in path for path in child) and any("/runbooks/" in path for path in child)
    assert "mixed-fleet/README.md" in child
    assert child == plain


def _corrupting(monkeypatch: pytest.MonkeyPatch, broken: Callable[[str], bool]) -> None:
    """Make the renderer add an unknown field to every object of the files `broken` picks."""
    real = synth.render_trees

    def corrupt(loaded: Any) -> dict[str, Tree]:
        trees = real(loaded)
        for tree in trees.values():
            for path, content in tree.files.items():
                if broken(path) and isinstance(content, list):
                    content[0]["spec"]["bogus"] = 1
        return trees

    monkeypatch.setattr(synth, "render_trees", corrupt)


def _handoff(path: str) -> bool:
    return path.startswith("handoff/") and "nodepoolhandoff" in path


def _device_class(path: str) -> bool:
    return "/20-device-classes/deviceclass_" in path


@pytest.mark.parametrize(
    ("broken", "named"),
    [
        (_handoff, ["NodePoolHandoff/"]),
        (_device_class, ["DeviceClass/"]),
        (lambda p: _handoff(p) or _device_class(p), ["NodePoolHandoff/", "DeviceClass/"]),
    ],
    ids=["child's share", "parent's share", "both"],
)
def test_invalid_output_names_every_invalid_object_wherever_it_was_serialised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, broken: Callable[[str], bool], named: list[str]
) -> None:
    # GIVEN a renderer bug in hand-offs (the child's share), in DeviceClasses (the parent's) or both
    (loaded,) = load_stack(write_spec(tmp_path / "lab.yaml", minimal_spec()))
    _corrupting(monkeypatch, broken)
    # WHEN / THEN synth refuses, naming every invalid object, and writes nothing
    with pytest.raises(RenderedOutputInvalid) as caught:
        synth_tree([loaded], tmp_path / "out")
    assert all(any(kind in line for line in caught.value.lines) for kind in named)
    assert not (tmp_path / "out" / loaded.platform.name).exists()


def test_a_policy_refusal_comes_before_invalid_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a node listed by two pools (GP101, an error) and invalid hand-offs
    doc = minimal_spec()
    doc["spec"]["nodePools"][1]["nodes"] = doc["spec"]["nodePools"][0]["nodes"][:1]
    (loaded,) = load_stack(write_spec(tmp_path / "lab.yaml", doc))
    _corrupting(monkeypatch, _handoff)
    # WHEN / THEN the policy refusal is what synth reports, as a plain run does
    with pytest.raises(PolicyRefusal) as caught:
        synth_tree([loaded], tmp_path / "out")
    assert any(isinstance(p, Problem) and p.code == "GP101" for p in caught.value.problems)
