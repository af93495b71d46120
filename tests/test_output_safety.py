"""Issue 17, items 1-3 through the CLI: synth touches only what it created, writes every platform
or none, and refuses two things that would render as one (exit 2, both sources named)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from gpuplatform.cli import main
from tests.conftest import REPO
from tests.specs import listing, minimal_spec, python_stack, write_spec

Mutation = Callable[[dict[str, Any]], None]
TRAINER = REPO / "stacks" / "manifests" / "trainer.yaml"


def _run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def _synth(spec: Path, out: Path, *extra: str) -> Result:
    return _run("synth", str(spec), "--out", str(out), *extra)


def _spec(tmp_path: Path, mutate: Mutation | None = None, name: str = "lab.yaml") -> Path:
    doc = minimal_spec()
    if mutate is not None:
        mutate(doc)
    return write_spec(tmp_path / name, doc)


# --- 1. data next to the output ------------------------------------------------------------------


def _neighbours(out: Path) -> None:
    """What a project folder holds next to a generated tree (the issue's reproducers)."""
    for name in (".venv.old", "venv", ".terraform.old", ".release.new", ".lab.old", ".lab.new"):
        (out / name).mkdir(parents=True)
        (out / name / "keep").write_text(name)
    (out / ".bashrc.new").write_text("export EDITOR=vi\n")
    (out / ".staging-link.new").symlink_to(out / "venv")


@pytest.mark.parametrize("refused", [False, True], ids=["written", "refused"])
def test_synth_leaves_everything_next_to_its_tree_as_it_was(tmp_path: Path, refused: bool) -> None:
    # GIVEN --out proj holding a virtualenv backup, terraform state, a release folder, a dotfile
    out = tmp_path / "proj"
    _neighbours(out)
    if refused:
        (out / "lab").mkdir()
        (out / "lab" / "mine.txt").write_text("not gpuplatform's")
    before = listing(out)
    # WHEN synth runs (or is refused: `lab` is not its folder)
    result = _synth(_spec(tmp_path), out)
    # THEN it exits 0 (or 2), and every one of them is byte for byte as it was
    # (the issue: `.venv.old` deleted, `.terraform.old` renamed, `.bashrc.new` made every run exit 70)
    assert result.exit_code == (2 if refused else 0), result.output
    after = listing(out)
    assert {k: v for k, v in after.items() if k in before} == before
    assert set(after) - set(before) <= {".gpuplatform.lock"} | {k for k in after if k.startswith("lab")}


def test_prune_removes_no_folder_that_merely_holds_a_file_named_like_our_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a project rendered by `synth` (no STACK: it prunes), and a folder of someone else's
    # with a file called gpuplatform.lock.json in dist/
    (tmp_path / "stacks").mkdir()
    write_spec(tmp_path / "stacks" / "lab.yaml", minimal_spec())
    monkeypatch.chdir(tmp_path)
    assert _run("synth").exit_code == 0
    (tmp_path / "dist" / "notes").mkdir()
    (tmp_path / "dist" / "notes" / "gpuplatform.lock.json").write_text('{"mine": true}')
    (tmp_path / "dist" / "notes" / "todo.md").write_text("- do not delete\n")
    # WHEN synth runs again / THEN the folder stays, with a warning
    result = _run("synth")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "dist" / "notes" / "todo.md").read_text() == "- do not delete\n"
    assert "not pruned" in result.stderr


def test_a_dangling_state_file_link_creates_nothing_where_it_points(tmp_path: Path) -> None:
    out, victim = tmp_path / "out", tmp_path / "victim"
    out.mkdir()
    (out / ".gpuplatform.lock").symlink_to(victim)
    result = _synth(_spec(tmp_path), out)
    assert result.exit_code == 2
    assert "is a symbolic link" in result.stderr
    assert not os.path.lexists(victim)
    assert not (out / "lab").exists()


def test_a_stack_that_changes_directory_does_not_move_the_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a Python stack that chdirs somewhere else while it runs
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    python_stack(tmp_path / "lab.py", body=f"import os\nos.chdir({str(elsewhere)!r})\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1]))
    # WHEN synth writes to a relative --out / THEN it lands where the user was, not in `elsewhere`
    result = _run("synth", "lab.py", "--out", "out")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "lab" / "gpuplatform.lock.json").is_file()
    assert list(elsewhere.iterdir()) == []
    assert Path.cwd() == tmp_path


def test_a_platform_folder_replaced_by_a_link_is_refused_not_followed(tmp_path: Path) -> None:
    out, spec = tmp_path / "out", _spec(tmp_path)
    assert _synth(spec, out).exit_code == 0
    target = tmp_path / "target"
    (out / "lab").rename(target)
    (out / "lab").symlink_to(target)
    before = listing(target)
    result = _synth(spec, out)
    assert result.exit_code == 2
    assert "is a symbolic link" in result.stderr
    assert listing(target) == before


def test_an_out_folder_under_a_linked_folder_is_refused_not_written_through(tmp_path: Path) -> None:
    # GIVEN --out below a folder that is a link to elsewhere (issue 39, low)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "linked").symlink_to(elsewhere)
    # WHEN synth writes there / THEN it refuses, naming the link and the real folder, and writes nothing
    result = _synth(_spec(tmp_path), tmp_path / "linked" / "out")
    assert result.exit_code == 2
    assert f"error: {tmp_path / 'linked'}: is a symbolic link" in result.stderr
    assert str(elsewhere / "out") in result.stderr
    assert list(elsewhere.iterdir()) == []


# --- 2. every platform or none -----------------------------------------------------------------


def test_a_run_whose_second_platform_is_refused_leaves_the_first_as_it_was(tmp_path: Path) -> None:
    # GIVEN two platforms written, then someone's file put into the second one's folder
    out = tmp_path / "out"
    assert _synth(python_stack(tmp_path / "pair.py", names=("a", "b"), wave="pilot"), out).exit_code == 0
    (out / "b" / "mine.txt").write_text("mine")
    before = listing(out)
    # WHEN both are rendered again from a changed spec
    result = _synth(python_stack(tmp_path / "pair.py", names=("a", "b"), wave="claims"), out)
    # THEN the run is refused and the first platform was not replaced either
    assert result.exit_code == 2
    assert "mine.txt" in result.stderr
    assert listing(out) == before


# --- 3. collisions -------------------------------------------------------------------------------


def _add(key: str, *items: dict[str, Any]) -> Mutation:
    return lambda d: d["spec"].setdefault(key, []).extend(items)


def _workload(kind: str, name: str, **extra: Any) -> dict[str, Any]:
    return {"kind": kind, "namespace": "team-a", "name": name, "tier": "full", "movesIn": "claims", **extra}


def _tenant_template(name: str) -> Mutation:
    return lambda d: d["spec"]["tenants"][0]["claimTemplates"].append({"name": name, "tier": "full"})


def _pool(name: str, provisioner: str) -> dict[str, Any]:
    return {
        "name": name,
        "product": "H100-80GB",
        "provisioner": {"kind": "karpenter", "name": provisioner},
        "migratesIn": "pilot",
    }


def _both(*mutations: Mutation) -> Mutation:
    def mutate(doc: dict[str, Any]) -> None:
        for m in mutations:
            m(doc)

    return mutate


COLLISIONS: list[tuple[str, Mutation, list[str]]] = [
    (
        "deployment-and-job-share-a-template",
        _add("workloads", _workload("Deployment", "trainer", gpus=4), _workload("Job", "trainer")),
        ["spec.workloads[1].name", "ResourceClaimTemplate team-a/trainer-gpu", "spec.workloads[0].name"],
    ),
    (
        "tenant-template-vs-generated-template",
        _both(_tenant_template("trainer-gpu"), _add("workloads", _workload("Deployment", "trainer"))),
        ["spec.workloads[0].name", "spec.tenants[0].claimTemplates[1].name"],
    ),
    (
        "tier-and-bridge-of-one-name",
        _add("bridges", {"name": "full"}),
        ["spec.bridges[0].name", "DeviceClass 'full.lab.example.com'", "spec.tiers[0].name"],
    ),
    (
        "two-pools-on-one-karpenter-nodepool",
        _add("nodePools", _pool("k1", "gpu-h100"), _pool("k2", "gpu-h100")),
        ["spec.nodePools[3].provisioner.name", "karpenter 'gpu-h100'", "spec.nodePools[2].provisioner.name"],
    ),
    (
        "two-manifests-with-one-file-name",
        _add(
            "workloads",
            _workload("Deployment", "a", manifest="one/app.yaml"),
            _workload("Deployment", "b", manifest="two/app.yaml"),
        ),
        ["spec.workloads[1].manifest", "hand-off file 'app.yaml'", "spec.workloads[0].manifest"],
    ),
    (
        "tier-listed-twice-in-a-wave",
        lambda d: d["spec"]["waves"][2]["tiers"].append("full"),
        ["spec.waves[2].tiers[1]", "tier 'full' is already listed at spec.waves[2].tiers[0]"],
    ),
    (
        "tier-named-as-the-charts-class",
        lambda d: (
            d["spec"].update(domain="nvidia.com")
            or d["spec"]["tiers"][0].update(name="gpu")
            or d["spec"]["waves"][2].update(tiers=["gpu"])
            or d["spec"]["tenants"][0].update(tiers=["gpu"], claimTemplates=[])
        ),
        ["spec.tiers[0].name", "'gpu.nvidia.com' is the DRA driver chart's own class"],
    ),
    (
        "tenant-in-the-driver-namespace",
        lambda d: d["spec"]["tenants"][0].update(namespace="nvidia-dra-driver-gpu"),
        ["spec.tenants[0].namespace", "Namespace 'nvidia-dra-driver-gpu'", "spec.draDriver.namespace"],
    ),
]


@pytest.mark.parametrize(("mutate", "fragments"), [c[1:] for c in COLLISIONS], ids=[c[0] for c in COLLISIONS])
def test_two_spec_items_that_render_as_one_are_refused_naming_both(
    tmp_path: Path, mutate: Mutation, fragments: list[str]
) -> None:
    for folder in ("one", "two"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "app.yaml").write_text(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x, namespace: team-a}\n"
        )
    out = tmp_path / "out"
    result = _synth(_spec(tmp_path, mutate), out)
    assert result.exit_code == 2, result.output
    for fragment in fragments:
        assert fragment in result.stderr
    assert not (out / "lab").exists()


def test_two_platforms_of_one_name_in_a_python_stack_are_refused(tmp_path: Path) -> None:
    stack = python_stack(tmp_path / "twins.py", names=("lab", "lab"))
    out = tmp_path / "out"
    result = _synth(stack, out)
    assert result.exit_code == 2
    assert "platform name 'lab' is rendered twice" in result.stderr
    assert not out.exists() or not (out / "lab").exists()


def test_a_file_rendered_twice_is_refused_by_the_tree_itself(tmp_path: Path) -> None:
    # GIVEN a workload whose manifest is named like the pool hand-off the tool writes beside it
    (tmp_path / "nodepoolhandoff_old.yaml").write_text(TRAINER.read_text().replace("training", "team-a"))
    workload = _workload("Deployment", "trainer", gpus=4, manifest="nodepoolhandoff_old.yaml")
    out = tmp_path / "out"
    # WHEN it is synthesised / THEN the second write of that path is refused, naming both contents
    result = _synth(_spec(tmp_path, _add("workloads", workload)), out)
    assert result.exit_code == 2, result.output
    assert (
        "renders handoff/02-claims/nodepoolhandoff_old.yaml twice: NodePoolHandoff old and a text file"
        in (result.stderr)
    )
    assert not (out / "lab").exists()
