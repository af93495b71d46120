"""The writer touches only what it created: ownership, recovery by record, all-or-nothing, durability."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

import gpuplatform.output.write as write
from gpuplatform.errors import EnvironmentFailure, InputError
from gpuplatform.output.serialize import LOCK_FILE, lock_document
from gpuplatform.output.state_key import seal, state_key
from gpuplatform.output.write import STATE_FILE, exclusive_output, owned_tree, recover, write_trees
from tests.specs import listing


def _files(platform: str, marker: str, **more: bytes) -> dict[str, bytes]:
    files = {"waves/a.yaml": marker.encode(), f"only-{marker}.yaml": b"x", **more}
    files[LOCK_FILE] = lock_document(files, platform=platform, spec={}, origin={"activeWave": marker})
    return files


def test_replace_swaps_the_whole_tree_and_leaves_only_the_tree_and_the_lock(tmp_path: Path) -> None:
    write_trees(tmp_path, {"lab": _files("lab", "old")})
    write_trees(tmp_path, {"lab": _files("lab", "new")})
    assert (tmp_path / "lab" / "waves" / "a.yaml").read_text() == "new"
    assert not (tmp_path / "lab" / "only-old.yaml").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [STATE_FILE, "lab"]
    assert (tmp_path / STATE_FILE).read_bytes() == b"", "the state file is empty between runs"


@pytest.mark.parametrize(
    ("prepare", "fragment"),
    [
        (lambda t: (t / "precious.txt").write_text("mine"), "has no gpuplatform.lock.json"),
        (lambda t: (t / LOCK_FILE).write_text("whatever"), "did not write for platform 'lab'"),
        (
            lambda t: (t / LOCK_FILE).write_bytes(_files("other", "x")[LOCK_FILE]),
            "did not write for platform 'lab'",
        ),
    ],
    ids=["no-lock", "garbage-lock", "lock-of-another-platform"],
)
def test_a_folder_that_is_not_ours_is_refused_and_kept(tmp_path: Path, prepare: Any, fragment: str) -> None:
    (tmp_path / "lab").mkdir()
    prepare(tmp_path / "lab")
    before = listing(tmp_path)
    with pytest.raises(InputError, match=fragment):
        write_trees(tmp_path, {"lab": _files("lab", "new")})
    assert {k: v for k, v in listing(tmp_path).items() if k != STATE_FILE} == before


@pytest.mark.parametrize("intruder", ["file", "folder", "link"])
def test_our_tree_with_something_foreign_inside_is_refused(tmp_path: Path, intruder: str) -> None:
    # GIVEN a tree synth wrote, into which someone put a file, a folder or a link
    write_trees(tmp_path, {"lab": _files("lab", "old")})
    inside = tmp_path / "lab" / "waves" / "notes"
    if intruder == "file":
        inside.write_text("mine")
    elif intruder == "folder":
        inside.mkdir()
    else:
        inside.symlink_to(tmp_path.parent)
    before = listing(tmp_path)
    # WHEN it is replaced / THEN the run is refused and nothing changes
    with pytest.raises(InputError, match=r"holds files gpuplatform did not write: waves/notes"):
        write_trees(tmp_path, {"lab": _files("lab", "new")})
    assert listing(tmp_path) == before


def test_a_platform_folder_replaced_by_a_link_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    write_trees(elsewhere, {"lab": _files("lab", "old")})
    out = tmp_path / "out"
    out.mkdir()
    (out / "lab").symlink_to(elsewhere / "lab")
    before = listing(tmp_path)
    with pytest.raises(InputError, match="is a symbolic link"):
        write_trees(out, {"lab": _files("lab", "new")})
    assert {k: v for k, v in listing(tmp_path).items() if k != f"out/{STATE_FILE}"} == before


@pytest.mark.parametrize("dangling", [True, False])
def test_a_state_file_that_is_a_link_is_refused_and_nothing_is_created_where_it_points(
    tmp_path: Path, dangling: bool
) -> None:
    out, target = tmp_path / "out", tmp_path / "victim"
    out.mkdir()
    if not dangling:
        target.write_text("precious")
    (out / STATE_FILE).symlink_to(target)
    with pytest.raises(InputError, match="is a symbolic link"):
        write_trees(out, {"lab": _files("lab", "new")})
    assert (not target.exists()) if dangling else target.read_text() == "precious"
    assert not (out / "lab").exists()


def test_a_state_file_with_foreign_content_is_refused(tmp_path: Path) -> None:
    (tmp_path / STATE_FILE).write_text("someone else's lock\n")
    with pytest.raises(InputError, match="holds data gpuplatform did not write"):
        write_trees(tmp_path, {"lab": _files("lab", "new")})
    assert (tmp_path / STATE_FILE).read_text() == "someone else's lock\n"


LOOKALIKES = {
    ".venv.old": "venv",
    ".terraform.old": None,
    ".release.new": None,
    ".lab.old": "lab",
    ".lab.new": None,
    ".gpuplatform-staging.0000000000000000.lab": None,
    ".gpuplatform-backup.0000000000000000.lab": "lab",
}


@pytest.mark.parametrize("refused", [False, True], ids=["written", "refused"])
def test_names_that_look_like_staging_or_backups_are_never_touched(tmp_path: Path, refused: bool) -> None:
    # GIVEN folders and files next to the output whose names merely look like a writer's leftovers
    for name, sibling in LOOKALIKES.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "data").write_text(name)
        if sibling is not None and sibling != "lab":
            (tmp_path / sibling).mkdir(exist_ok=True)
    (tmp_path / ".bashrc.new").write_text("alias ll='ls -l'\n")
    if refused:
        (tmp_path / "lab").mkdir()
        (tmp_path / "lab" / "mine.txt").write_text("mine")
    before = listing(tmp_path)
    # WHEN synth writes `lab` (or is refused because `lab` is not ours)
    if refused:
        with pytest.raises(InputError):
            write_trees(tmp_path, {"lab": _files("lab", "new")})
    else:
        write_trees(tmp_path, {"lab": _files("lab", "new")})
    # THEN every one of them is exactly as it was
    after = listing(tmp_path)
    assert {k: v for k, v in after.items() if k in before} == before


def test_pruning_removes_only_trees_whose_lock_verifies(tmp_path: Path) -> None:
    # GIVEN our tree `gone`, our tree `edited` with a changed file, and a folder that merely holds a
    # file named gpuplatform.lock.json
    write_trees(tmp_path, {"gone": _files("gone", "a"), "edited": _files("edited", "a")})
    (tmp_path / "edited" / "waves" / "a.yaml").write_text("hand edit")
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / LOCK_FILE).write_text('{"npm": "lockfile"}')
    (tmp_path / "project" / "src.py").write_text("print()")
    # WHEN synth prunes while writing only `lab`
    warnings = write_trees(tmp_path, {"lab": _files("lab", "x")}, prune=True)
    # THEN only `gone` is removed; the others stay, with a warning each
    assert sorted(p.name for p in tmp_path.iterdir()) == [STATE_FILE, "edited", "lab", "project"]
    assert (tmp_path / "edited" / "waves" / "a.yaml").read_text() == "hand edit"
    assert (tmp_path / "project" / "src.py").read_text() == "print()"
    assert sorted(Path(w.file).name for w in warnings) == ["edited", "project"]
    assert all(w.severity == "warning" and "not pruned" in w.message for w in warnings)


def test_a_refused_platform_leaves_every_other_platform_as_it_was(tmp_path: Path) -> None:
    # GIVEN two platforms written before, and then `b` taken over by something that is not ours
    write_trees(tmp_path, {"a": _files("a", "old"), "b": _files("b", "old")})
    (tmp_path / "b" / "mine.txt").write_text("mine")
    before = listing(tmp_path)
    # WHEN a run writes both / THEN it is refused and `a` is not replaced either
    with pytest.raises(InputError, match=r"mine\.txt"):
        write_trees(tmp_path, {"a": _files("a", "new"), "b": _files("b", "new")})
    assert listing(tmp_path) == before


@pytest.mark.parametrize("exchange", [True, False], ids=["exchange", "renames"])
@pytest.mark.parametrize("failure", [OSError(errno.EIO, "Input/output error"), KeyboardInterrupt()])
def test_a_failure_mid_swap_restores_every_platform(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exchange: bool, failure: BaseException
) -> None:
    # GIVEN three platforms, and a swap that fails after the first platform went in
    write_trees(tmp_path, {n: _files(n, "old") for n in "abc"})
    before = listing(tmp_path)
    swap, calls = write._swap, []
    if not exchange:
        monkeypatch.setattr(write, "_exchange", lambda a, b: False)

    def failing(out: Path, entry: Any) -> None:
        calls.append(entry.name)
        if len(calls) == 2:
            raise failure
        swap(out, entry)

    monkeypatch.setattr(write, "_swap", failing)
    # WHEN the run fails / THEN the error surfaces and every platform is as before, nothing left over
    with pytest.raises(EnvironmentFailure if isinstance(failure, OSError) else KeyboardInterrupt):
        write_trees(tmp_path, {n: _files(n, "new") for n in "abc"})
    assert listing(tmp_path) == before


def test_a_full_disk_while_staging_is_an_environment_failure_and_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_trees(tmp_path, {"lab": _files("lab", "old")})
    before = listing(tmp_path)
    real = write._write_files

    def full(root: Path, files: dict[str, bytes], current: Path | None) -> None:
        real(root, dict(list(files.items())[:1]), current)
        raise OSError(errno.ENOSPC, "No space left on device", str(root / "waves"))

    monkeypatch.setattr(write, "_write_files", full)
    with pytest.raises(EnvironmentFailure, match="No space left on device"):
        write_trees(tmp_path, {"lab": _files("lab", "new")})
    assert listing(tmp_path) == before


@pytest.mark.parametrize("half", ["first", "second"])
def test_a_file_that_cannot_be_created_in_either_half_stops_the_staging_and_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, half: str
) -> None:
    # GIVEN many files, staged by two threads, and one that the disk refuses in the chosen half
    write_trees(tmp_path, {"lab": _files("lab", "old")})
    before = listing(tmp_path)
    files = _files("lab", "new", **{f"f{i:03}": b"x" for i in range(200)})
    names = list(files)  # the order the writer splits them in
    refused = names[len(names) // 4] if half == "first" else names[3 * len(names) // 4]
    created: list[str] = []
    real = write._create

    def create(path: str, data: bytes) -> None:
        if path.endswith("/" + refused):
            raise OSError(errno.ENOSPC, "No space left on device", path)
        created.append(path)
        real(path, data)

    monkeypatch.setattr(write, "_create", create)
    # WHEN / THEN the run fails as an environment failure, leaving everything as it was
    with pytest.raises(EnvironmentFailure, match="No space left on device"):
        write_trees(tmp_path, {"lab": files})
    assert listing(tmp_path) == before
    # AND the staging stopped: not every other file was created
    assert len(created) < len(files) - 1


def test_an_old_tree_that_cannot_be_removed_is_a_warning_and_blocks_no_later_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN an old tree the machine will not let us remove (read-only folder, as a non-root user)
    write_trees(tmp_path, {"lab": _files("lab", "old")})
    rmtree = write.shutil.rmtree

    def refused(path: Any, *args: Any, **kwargs: Any) -> None:
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr(write.shutil, "rmtree", refused)
    # WHEN it is replaced / THEN the run succeeds, warns, and records the leftover
    warnings = write_trees(tmp_path, {"lab": _files("lab", "new")})
    assert (tmp_path / "lab" / "waves" / "a.yaml").read_text() == "new"
    assert [w.message for w in warnings] == [
        "could not remove an old tree (retried next run): Permission denied"
    ]
    leftover = Path(warnings[0].file).name
    assert leftover in (tmp_path / STATE_FILE).read_text()
    # AND the next run (the machine allows it again) removes it and is not blocked
    monkeypatch.setattr(write.shutil, "rmtree", rmtree)
    assert write_trees(tmp_path, {"lab": _files("lab", "newer")}) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == [STATE_FILE, "lab"]
    assert (tmp_path / STATE_FILE).read_bytes() == b""


@pytest.mark.skipif(os.geteuid() == 0, reason="root removes read-only folders anyway")
def test_a_read_only_folder_in_the_old_tree_is_removed(tmp_path: Path) -> None:
    write_trees(tmp_path, {"lab": _files("lab", "old")})
    os.chmod(tmp_path / "lab" / "waves" / "a.yaml", stat.S_IRUSR)
    os.chmod(tmp_path / "lab" / "waves", stat.S_IRUSR | stat.S_IXUSR)
    assert write_trees(tmp_path, {"lab": _files("lab", "new")}) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == [STATE_FILE, "lab"]


def test_recovery_acts_on_the_recorded_run_only(tmp_path: Path) -> None:
    # GIVEN a record of a run that moved `lab` to its backup name and died, next to a look-alike
    write_trees(tmp_path, {"lab": _files("lab", "old")})
    digest = owned_tree(tmp_path / "lab", "lab")
    assert not isinstance(digest, str)
    (tmp_path / "lab").rename(tmp_path / ".gpuplatform-backup.1111111111111111.lab")
    (tmp_path / ".gpuplatform-backup.2222222222222222.lab").mkdir()
    entry = {
        "name": "lab",
        "staging": ".gpuplatform-staging.1111111111111111.lab",
        "backup": ".gpuplatform-backup.1111111111111111.lab",
        "old": digest.lock_digest,
        "new": "sha256:" + "0" * 64,
    }
    record = {"format": "gpuplatform.dev/output-state/v1", "phase": "swapping", "entries": [entry]}
    (tmp_path / STATE_FILE).write_text(json.dumps(seal(record, state_key())) + "\n")
    # WHEN the next run takes the lock
    with exclusive_output(tmp_path) as state:
        assert recover(state) == []
    # THEN the old tree is back, the record is cleared, the look-alike is untouched
    assert (tmp_path / "lab" / "waves" / "a.yaml").read_text() == "old"
    assert (tmp_path / ".gpuplatform-backup.2222222222222222.lab").is_dir()
    assert (tmp_path / STATE_FILE).read_bytes() == b""


def test_durability_is_one_filesystem_sync_per_run_not_one_per_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    syncs: list[Path] = []
    monkeypatch.setattr(write, "_sync_filesystem", syncs.append)
    monkeypatch.setattr(os, "fsync", lambda fd: None)
    write_trees(tmp_path, {n: _files(n, "x") for n in "abc"})
    assert syncs == [tmp_path]


def test_unchanged_files_are_staged_as_links_to_the_current_tree_which_stays_intact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = _files("lab", "old", b=b"same", c=b"also the same")
    write_trees(tmp_path, {"lab": files})
    inode = (tmp_path / "lab" / "b").stat().st_ino
    (tmp_path / "lab" / "only-old.yaml").write_text("edited by hand")
    (tmp_path / "lab" / "waves" / "a.yaml").chmod(0o755)
    os.link(tmp_path / "lab" / "c", tmp_path / "outside")
    write_trees(tmp_path, {"lab": files})
    assert (tmp_path / "lab" / "b").stat().st_ino == inode, "unchanged: linked"
    assert (tmp_path / "lab" / "only-old.yaml").read_text() == "x", "edited: written again"
    assert stat.S_IMODE((tmp_path / "lab" / "waves" / "a.yaml").stat().st_mode) & 0o111 == 0
    assert (tmp_path / "outside").stat().st_nlink == 1, "a file linked from elsewhere is not shared"
    assert (tmp_path / "lab" / "c").read_bytes() == b"also the same"
    assert {p.stat().st_nlink for p in (tmp_path / "lab").rglob("*") if p.is_file()} == {1}

    before = listing(tmp_path)

    def crash(point: str) -> None:
        if point == "staged":
            raise OSError(errno.EIO, "I/O error", str(tmp_path))

    monkeypatch.setattr(write, "crash_hook", crash)
    with pytest.raises(EnvironmentFailure):
        write_trees(tmp_path, {"lab": _files("lab", "new", b=b"same")})
    assert listing(tmp_path) == before, "rolled back: the linked old files are as they were"
    assert {p.stat().st_nlink for p in (tmp_path / "lab").rglob("*") if p.is_file()} == {1}


def test_second_writer_fails_clearly_while_the_lock_is_held(tmp_path: Path) -> None:
    with open(tmp_path / STATE_FILE, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        with (
            pytest.raises(InputError, match="another gpuplatform synth holds the lock"),
            exclusive_output(tmp_path, timeout=0.1),
        ):
            pass


def _split(files: dict[str, bytes]) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """The lock file and `runbooks/` apart from the rest (what synth's child computes meanwhile)."""
    late = {rel: data for rel, data in files.items() if rel == LOCK_FILE or rel.startswith("runbooks/")}
    return {rel: data for rel, data in files.items() if rel not in late}, late


def test_files_given_late_are_staged_after_the_rest_and_their_lock_is_recorded(tmp_path: Path) -> None:
    # GIVEN an old tree, and a new one whose runbook and lock file come from `rest`
    write_trees(tmp_path, {"lab": _files("lab", "old")})
    new = _files("lab", "new", **{"runbooks/01-a.md": b"# a\n"})
    early, late = _split(new)
    seen: list[Any] = []

    def rest() -> dict[str, dict[str, bytes]]:
        # WHILE it is called: the early files are staged, and the record holds no new digest yet
        state = json.loads((tmp_path / STATE_FILE).read_text())
        (entry,) = state["entries"]
        seen.append((state["phase"], entry["new"], listing(tmp_path / entry["staging"])))
        return {"lab": late}

    # WHEN the tree is written with the late files
    write_trees(tmp_path, {"lab": early}, rest=rest)
    # THEN rest ran while only the early files were staged, with no new digest recorded
    ((phase, digest, staged),) = seen
    assert (phase, digest) == ("staging", None)
    assert set(staged) >= set(early) and not set(staged) & set(late)
    # AND the tree holds every file, and its lock is the late one
    assert not isinstance(owned_tree(tmp_path / "lab", "lab", digests=True), str)
    assert {rel: (tmp_path / "lab" / rel).read_bytes() for rel in new} == new
    assert sorted(p.name for p in tmp_path.iterdir()) == [STATE_FILE, "lab"]


def test_an_error_from_rest_undoes_the_run(tmp_path: Path) -> None:
    # GIVEN an old tree
    write_trees(tmp_path, {"lab": _files("lab", "old")})
    before = listing(tmp_path)
    early, _ = _split(_files("lab", "new"))

    def rest() -> dict[str, dict[str, bytes]]:
        raise InputError.single("stack.py", "spec.waves[0].name", "bad")

    # WHEN the late files cannot be computed
    with pytest.raises(InputError, match="bad"):
        write_trees(tmp_path, {"lab": early}, rest=rest)
    # THEN the old tree is in place and no staging folder is left
    assert listing(tmp_path) == before
