"""A crafted state file `<out>/.gpuplatform.lock` is refused before the writer acts on any name in it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gpuplatform.cli import main
from gpuplatform.errors import InputError
from gpuplatform.output.serialize import LOCK_FILE, lock_document
from gpuplatform.output.write import STATE_FILE, write_trees
from tests.specs import listing, minimal_spec, write_spec

RUN = "0123456789abcdef"
DIGEST = "sha256:" + "0" * 64


def _files(platform: str) -> dict[str, bytes]:
    files = {"waves/a.yaml": b"a"}
    files[LOCK_FILE] = lock_document(files, platform=platform, spec={}, origin={"activeWave": "a"})
    return files


def _entry(name: str = "lab", **changed: Any) -> dict[str, Any]:
    entry = {
        "name": name,
        "staging": f".gpuplatform-staging.{RUN}.{name}",
        "backup": f".gpuplatform-backup.{RUN}.{name}",
        "old": None,
        "new": None,
    }
    return entry | changed


def _state(*entries: Any, phase: Any = "committed", **more: Any) -> str:
    doc = {"format": "gpuplatform.dev/output-state/v1", "phase": phase, "entries": list(entries)} | more
    return json.dumps(doc) + "\n"


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    """`out` with a tree synth wrote, and a precious folder beside it."""
    out, victim = tmp_path / "out", tmp_path / "victim"
    write_trees(out, {"lab": _files("lab")})
    victim.mkdir()
    (victim / "precious.txt").write_text("mine")
    return out, victim


HOSTILE: dict[str, tuple[Any, str]] = {
    "relative-staging": (lambda v: _state(_entry(staging="../victim")), "entries[0].staging"),
    "absolute-backup": (lambda v: _state(_entry(backup=str(v))), "entries[0].backup"),
    "relative-name": (lambda v: _state(_entry("../victim", new=DIGEST), phase="swapping"), "entries[0].name"),
    "absolute-name": (lambda v: _state(_entry(str(v))), "entries[0].name"),
    "absolute-leftover": (
        lambda v: _state(leftovers=[_entry(staging=str(v))], phase="idle"),
        "leftovers[0].staging",
    ),
    "another-platforms-staging": (
        lambda v: _state(_entry(staging=f".gpuplatform-staging.{RUN}.prod")),
        "entries[0].staging",
    ),
    "two-run-ids": (
        lambda v: _state(_entry(backup=".gpuplatform-backup.fedcba9876543210.lab")),
        "entries[0].backup",
    ),
    "nested-staging": (
        lambda v: _state(_entry(staging=f"lab/.gpuplatform-staging.{RUN}.lab")),
        "entries[0].staging",
    ),
    "unknown-phase": (lambda v: _state(_entry(), phase="rm -rf"), "phase"),
    "entries-not-a-list": (lambda v: _state(phase="idle").replace("[]", '"../victim"'), "entries"),
    "entry-not-an-object": (lambda v: _state("../victim"), "entries[0]"),
    "entry-with-an-extra-field": (lambda v: _state(_entry(path="../victim")), "entries[0]"),
    "digest-not-a-digest": (lambda v: _state(_entry(old=5), phase="swapping"), "entries[0].old"),
    "name-not-a-string": (lambda v: _state(_entry(name=["lab"])), "entries[0].name"),
    "recorded-twice": (lambda v: _state(_entry(), _entry()), "entries[1].staging"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_state_file_refuses_the_run_and_nothing_is_touched(
    world: tuple[Path, Path], case: str
) -> None:
    # GIVEN a state file that names a folder outside --out, or not in the writer's own naming
    out, victim = world
    craft, loc = HOSTILE[case]
    (out / f".gpuplatform-staging.{RUN}.prod").mkdir()
    (out / f".gpuplatform-staging.{RUN}.prod" / "data").write_text("someone's")
    (out / STATE_FILE).write_text(craft(victim))
    before = listing(out.parent)
    # WHEN the next run starts / THEN it refuses, naming the field, and deletes nothing
    with pytest.raises(InputError) as raised:
        write_trees(out, {"lab": _files("lab")})
    assert any(p.file == str(out / STATE_FILE) and p.loc == loc for p in raised.value.problems), raised.value
    assert listing(out.parent) == before


@pytest.mark.parametrize("key", ["name", "staging", "backup"])
def test_a_recorded_name_that_is_a_link_is_refused(world: tuple[Path, Path], key: str) -> None:
    # GIVEN a state file whose names are the writer's own, one of them a link to a folder elsewhere
    out, victim = world
    entry = _entry("lab2", new=DIGEST)
    (out / entry[key]).symlink_to(victim)
    (out / STATE_FILE).write_text(_state(entry, phase="swapping"))
    before = listing(out.parent)
    with pytest.raises(InputError, match="is a symbolic link") as raised:
        write_trees(out, {"lab": _files("lab")})
    assert raised.value.problems[0].loc == f"entries[0].{key}"
    assert listing(out.parent) == before


def test_synth_with_a_crafted_state_file_exits_2_with_a_located_error(tmp_path: Path) -> None:
    spec, out, victim = write_spec(tmp_path / "lab.yaml", minimal_spec()), tmp_path / "out", tmp_path / "v"
    out.mkdir()
    victim.mkdir()
    (out / STATE_FILE).write_text(_state(_entry(staging="../v", backup=str(victim))))
    result = CliRunner().invoke(main, ["synth", str(spec), "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: {out / STATE_FILE}:entries[0].backup: ")
    assert f"error: {out / STATE_FILE}:entries[0].staging: '../v' is not the writer's" in result.stderr
    assert victim.is_dir() and not (out / "lab").exists()


def test_a_state_file_the_writer_recorded_is_still_recovered(world: tuple[Path, Path]) -> None:
    # GIVEN the record of a committed run whose staging and backup folders are still there
    out, _ = world
    entry = _entry()
    (out / entry["staging"]).mkdir()
    (out / entry["backup"]).mkdir()
    (out / STATE_FILE).write_text(_state(entry))
    # WHEN the next run starts / THEN it finishes the clean-up as before
    write_trees(out, {"lab": _files("lab")})
    assert sorted(p.name for p in out.iterdir()) == [STATE_FILE, "lab"]
