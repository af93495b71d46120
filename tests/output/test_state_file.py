"""A crafted state file `<out>/.gpuplatform.lock` is refused before the writer acts on any name in it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gpuplatform.cli import main
from gpuplatform.errors import InputError
from gpuplatform.output.serialize import LOCK_FILE, lock_document
from gpuplatform.output.state_key import key_path as state_key_path
from gpuplatform.output.state_key import seal, state_key
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


def _sealed(record: str, key: bytes | None = None) -> str:
    """`record` with the MAC the writer of this user (or of `key`) would give it."""
    return json.dumps(seal(json.loads(record), key or state_key())) + "\n"


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
    (out / STATE_FILE).write_text(_sealed(_state(entry)))
    # WHEN the next run starts / THEN it finishes the clean-up as before
    write_trees(out, {"lab": _files("lab")})
    assert sorted(p.name for p in out.iterdir()) == [STATE_FILE, "lab"]


def _live_creation(out: Path) -> str:
    """The record of a run killed while it swapped in `lab` as a new tree: the live tree's lock digest
    as the new tree's, no old tree (exactly what a genuine interrupted creation records)."""
    lock = (out / "lab" / LOCK_FILE).read_bytes()
    return _state(_entry(new="sha256:" + hashlib.sha256(lock).hexdigest()), phase="swapping")


UNTRUSTED: dict[str, Any] = {
    "no-mac": lambda record: record,
    "another-key": lambda record: _sealed(record, b"k" * 32),
    "edited-after-sealing": lambda record: json.dumps(
        json.loads(_sealed(record.replace('"swapping"', '"staging"'))) | {"phase": "swapping"}
    ),
    "not-a-mac": lambda record: json.dumps(json.loads(record) | {"mac": "é"}),
}


@pytest.mark.parametrize("case", sorted(UNTRUSTED))
def test_a_crafted_record_of_an_interrupted_creation_does_not_delete_the_live_tree(
    world: tuple[Path, Path], case: str
) -> None:
    # GIVEN a state file from a pull request, another machine or an edit, that says `lab` was being
    # created when the run died
    out, _ = world
    (out / STATE_FILE).write_text(UNTRUSTED[case](_live_creation(out)))
    before = listing(out)
    # WHEN the next run (of another platform) starts
    with pytest.raises(InputError) as raised:
        write_trees(out, {"prod": _files("prod")})
    # THEN it refuses, saying the record was not written here, and the live tree is still there
    assert [(p.file, p.loc) for p in raised.value.problems] == [(str(out / STATE_FILE), "mac")]
    assert listing(out) == before


def test_the_same_record_written_here_is_recovered_as_an_interrupted_creation(
    world: tuple[Path, Path],
) -> None:
    # GIVEN the record a run of this user left when it was killed while it created `lab`
    out, _ = world
    (out / STATE_FILE).write_text(_sealed(_live_creation(out)))
    # WHEN the next run starts / THEN it undoes the creation: all platforms of a run or none
    write_trees(out, {"prod": _files("prod")})
    assert sorted(p.name for p in out.iterdir()) == [STATE_FILE, "prod"]


def test_synth_with_a_record_not_written_here_exits_2_and_says_how_to_proceed(tmp_path: Path) -> None:
    # GIVEN a tree synth wrote, and a record from elsewhere that would remove it
    spec, out = write_spec(tmp_path / "lab.yaml", minimal_spec()), tmp_path / "out"
    assert CliRunner().invoke(main, ["synth", str(spec), "--out", str(out)]).exit_code == 0
    (out / STATE_FILE).write_text(_live_creation(out))
    before = listing(out)
    # WHEN synth runs
    result = CliRunner().invoke(main, ["synth", str(spec), "--out", str(out)])
    # THEN it exits 2 with one located error and a hint, and changes nothing
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        f"error: {out / STATE_FILE}:mac: has no MAC: this record was not written by gpuplatform for this "
        f"user on this machine (key {state_key_path()}); it may come from a pull request, another machine "
        "or an edit. Nothing was changed\n"
        "  hint: if no synth of yours was interrupted in this folder, inspect the file, remove it and run "
        "again (the trees are in Git); if one was, and its key is gone (a library call's key is its "
        "process's), `synth --check` lists the folders it left and `synth --recover` recovers them from what "
        "they hold, without the record\n"
    )
    assert listing(out) == before


@pytest.mark.parametrize("record", [False, True], ids=["empty-state-file", "record"])
@pytest.mark.parametrize("broken", ["open-to-others", "link"])
def test_a_state_key_that_cannot_be_trusted_refuses_the_run_before_it_acts(
    world: tuple[Path, Path], record: bool, broken: str
) -> None:
    # GIVEN a state key others can read (or a link to a key), and an empty state file or a record
    out, _ = world
    if record:
        (out / STATE_FILE).write_text(_sealed(_live_creation(out)))
    key = state_key_path()
    real = key.with_name("real-key")
    if broken == "link":
        key.rename(real)
        key.symlink_to(real)
    else:
        key.chmod(0o644)
    before = listing(out)
    try:
        # WHEN a run starts / THEN it refuses, naming the key file, and changes nothing
        with pytest.raises(InputError, match=r"is open to other users|is a symbolic link") as raised:
            write_trees(out, {"lab": _files("lab")})
    finally:
        if broken == "link":
            real.replace(key)
        key.chmod(0o600)
    assert [p.file for p in raised.value.problems] == [str(key)]
    assert listing(out) == before
