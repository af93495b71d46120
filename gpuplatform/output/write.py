"""All-or-nothing replacement of `<out>/<platform>/` trees that touches only what gpuplatform created.

Ownership. A platform tree is ours when its `gpuplatform.lock.json` has the shape
`serialize.lock_document` writes, for that platform, and the tree holds nothing the lock does not
list (no foreign file, folder or link); a tree is pruned only when every file also still has the
digest its lock records. The
staging and backup folders of a run carry a random run id (`.gpuplatform-staging.<run>.<platform>`)
and are recorded in the state file `<out>/.gpuplatform.lock` before they are created; recovery acts
on the recorded names only, never on names that merely look like ours, and only on a record sealed
with the runtime's state key (the CLI's: this user's, `state_key.py`; a library call's: its
process's), never on one from a pull request or another machine.
Links are never followed.

Protocol (one run at a time, under an flock on the state file):
1. recover what a killed run recorded: roll it back, or finish its clean-up if it had committed;
2. check every target (ours, or absent) and every prune candidate before anything changes;
3. record the plan, stage every platform (last the files a caller computed meanwhile, the lock
   files among them), flush the staging file system once (syncfs(2): one call for all files,
   instead of an fsync per file);
4. record "swapping" with the new trees' lock digests, swap every platform in (renameat2
   RENAME_EXCHANGE where the kernel has it, else two renames through the backup name), fsync
   `<out>`, record "committed", remove the old trees.
A failure or SIGINT before "swapping" restores every platform of the run; SIGINT from "swapping"
on is held until the run has finished (a warning says so); a kill is restored by the next run. At every instant each platform has a complete tree at its place or at a recorded name.

Tests kill runs at named points by replacing `crash_hook` (tests/test_crash_consistency.py).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import stat
import sys
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuplatform.errors import EnvironmentFailure, InputError, Problem
from gpuplatform.model.base import is_dns_label
from gpuplatform.model.limits import MAX_FILES
from gpuplatform.output.state_check import BACKUP, STAGING, state_problems
from gpuplatform.output.state_key import mac_problems, seal
from gpuplatform.runtime import current

__all__ = [
    "LOCK_ENTRY_MAX_BYTES",
    "LOCK_FILE",
    "LOCK_MAX_BYTES",
    "LOCK_TIMEOUT_SECONDS",
    "STATE_FILE",
    "crash_hook",
    "exclusive_output",
    "owned_tree",
    "read_regular_file",
    "refuse_linked_folder",
    "swap_folder",
    "tree_entries",
    "write_file",
    "write_trees",
]

#: The lock file of a platform tree: digests of every file, and what it was rendered from.
LOCK_FILE = "gpuplatform.lock.json"
STATE_FILE = ".gpuplatform.lock"
LOCK_TIMEOUT_SECONDS = 30.0
_STATE_FORMAT = "gpuplatform.dev/output-state/v1"
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
#: The longest line a lock gives one file: its path (a wave folder, a layer, a namespace folder and
#: a `<kind>_<namespace>_<name>.yaml` file name, each bounded by Kubernetes' name limits: at most
#: 512 bytes) and its digest, quoted and indented.
LOCK_ENTRY_MAX_BYTES = 640
#: A lock lists every file of its tree, and a tree holds at most MAX_FILES (the documented size
#: limit of a platform), so the read limit follows from it: no tree synth may write is refused when
#: read back (19,000 files make about 2 MB; 640,000 of the longest paths 410 MB).
LOCK_MAX_BYTES = MAX_FILES * LOCK_ENTRY_MAX_BYTES + (1 << 20)
#: Bytes of one rendered file read back to compare its digest (the largest renders ~1 MB).
_FILE_MAX_BYTES = 64 * 1024 * 1024


def crash_hook(point: str) -> None:
    """Called at `writing`, `staged`, `moved-old`, `swapped`, `committed`; tests make it kill the run."""


def _fail(path: Path, what: str, exc: OSError) -> EnvironmentFailure:
    return EnvironmentFailure(str(path), what, exc)


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths; False where renameat2 is not available."""
    libc = _libc()
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        return False
    rc = renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def _sync_filesystem(folder: Path) -> None:
    """Flush every written file of `folder`'s file system in one call (syncfs(2); sync(2) elsewhere)."""
    syncfs = getattr(_libc(), "syncfs", None)
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        if syncfs is None or syncfs(fd) != 0:
            os.sync()
    finally:
        os.close(fd)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_regular_file(path: Path, limit: int) -> bytes | None:
    """The bytes of `path` if it is a regular file (never through a link) of at most `limit` bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
        os.close(fd)
        return None
    with os.fdopen(fd, "rb") as handle:
        return handle.read(limit + 1)


_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def _is_lock_of(doc: Any, platform: str) -> bool:
    """Whether `doc` has the shape `serialize.lock_document` writes, for `platform`."""
    if (
        not isinstance(doc, dict)
        or doc.get("platform") != platform
        or not isinstance(doc.get("sdkVersion"), str)
    ):
        return False
    files = doc.get("files")
    return (
        isinstance(doc.get("specDigest"), str)
        and _DIGEST.fullmatch(doc["specDigest"]) is not None
        and isinstance(files, dict)
        and all(
            isinstance(rel, str)
            and isinstance(digest, str)
            and _DIGEST.fullmatch(digest) is not None
            and not rel.startswith("/")
            and ".." not in rel.split("/")
            for rel, digest in files.items()
        )
    )


def write_file(path: Path, data: bytes) -> None:
    """Write a file the user named (`init --out`, `convert --out`), never through a link.

    InputError when `path` is a link, a folder or not a regular file; EnvironmentFailure when the
    machine refuses the write.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InputError.single(
                str(path), "", "is a symbolic link; gpuplatform does not write through links"
            ) from None
        if exc.errno in (errno.EISDIR, errno.ENXIO):
            raise InputError.single(str(path), "", "is not a regular file") from None
        raise _fail(path, "cannot write", exc) from None
    with os.fdopen(fd, "wb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InputError.single(str(path), "", "is not a regular file")
        try:
            os.ftruncate(fd, 0)
            handle.write(data)
            handle.flush()
        except OSError as exc:
            raise _fail(path, "cannot write", exc) from None


def refuse_linked_folder(path: Path) -> None:
    """InputError when the output folder `path`, or a folder above it as named, is a link, or `path`
    is something other than a folder: every `--out` is written (or read) as the folder it names,
    never through a link."""
    if os.path.islink(path):
        raise InputError.single(
            str(path), "", "is a symbolic link; gpuplatform writes only into the real folder, name that"
        )
    for parent in [p for p in path.parents if p != Path(".")]:
        if os.path.islink(parent):
            raise InputError.single(
                str(parent),
                "",
                f"is a symbolic link; gpuplatform writes only into real folders: name {os.path.realpath(path)}",
            )
    if os.path.lexists(path) and not os.path.isdir(path):
        raise InputError.single(str(path), "", "cannot be used as the output folder: it is not a folder")


def swap_folder(fresh: Path, target: Path) -> Path | None:
    """Put the folder `fresh` at `target` (atomically where renameat2 is available); the path where
    the folder that was at `target` now is, for the caller to remove (None when there was none)."""
    if not os.path.lexists(target):
        fresh.rename(target)
        return None
    if _exchange(fresh, target):
        return fresh
    aside = fresh.with_name(fresh.name + ".old")
    target.rename(aside)
    fresh.rename(target)
    return aside


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _lock_digest(root: Path) -> str | None:
    """Digest of `root`'s lock file when `root` is a real folder holding one."""
    if not root.is_dir() or root.is_symlink():
        return None
    data = read_regular_file(root / LOCK_FILE, LOCK_MAX_BYTES)
    return None if data is None else _digest(data)


@dataclass(frozen=True)
class OwnedTree:
    """A platform tree gpuplatform wrote: its lock file's digest and the files the lock lists."""

    lock_digest: str
    files: dict[str, str]


def _walk(root: Path, rel: str = "") -> Iterator[tuple[str, os.DirEntry[str]]]:
    with os.scandir(root / rel if rel else root) as entries:
        for entry in entries:
            path = f"{rel}/{entry.name}" if rel else entry.name
            yield path, entry
            if entry.is_dir(follow_symlinks=False):
                yield from _walk(root, path)


def tree_entries(root: Path) -> set[str]:
    """Every file, link or other non-folder entry under `root` (a real folder), never through a link."""
    if root.is_symlink() or not root.is_dir():
        return set()
    return {rel for rel, entry in _walk(root) if not entry.is_dir(follow_symlinks=False)}


def owned_tree(root: Path, platform: str, *, digests: bool = False) -> OwnedTree | str:
    """The tree at `root` if gpuplatform wrote it, else why not (a sentence).

    Ours: a real folder whose lock file is a lock of `platform` and that holds only the files the
    lock lists (and their folders); with `digests`, every file still has the content we wrote.
    """
    if root.is_symlink():
        return "is a symbolic link"
    if not root.is_dir():
        return "is not a folder"
    data = read_regular_file(root / LOCK_FILE, LOCK_MAX_BYTES)
    if data is None:
        return f"has no {LOCK_FILE} (a regular file)"
    try:
        doc: Any = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        doc = None
    if not _is_lock_of(doc, platform):
        return f"has a {LOCK_FILE} that gpuplatform did not write for platform {platform!r}"
    files: dict[str, str] = doc["files"]
    folders = {rel.rsplit("/", i)[0] for rel in files for i in range(1, rel.count("/") + 1)}
    foreign = []
    for rel, entry in _walk(root):
        if entry.is_dir(follow_symlinks=False):
            ok = rel in folders
        elif entry.is_file(follow_symlinks=False):
            ok = rel in files or rel == LOCK_FILE
            if ok and digests and rel != LOCK_FILE:
                content = read_regular_file(root / rel, _FILE_MAX_BYTES)
                ok = content is not None and _digest(content) == files[rel]
        else:
            ok = False
        if not ok:
            foreign.append(rel)
    if foreign:
        shown = ", ".join(sorted(foreign)[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        what = (
            "files gpuplatform did not write or that were changed since"
            if digests
            else "files gpuplatform did not write"
        )
        return f"holds {what}: {shown}"
    return OwnedTree(_digest(data), files)


# --- the state file ------------------------------------------------------------------------------


@dataclass
class _Entry:
    """One platform of a run: its names and the lock digests of the old and the new tree (no new
    one for a tree pruned, nor while the run stages)."""

    name: str
    staging: str
    backup: str
    old: str | None
    new: str | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "staging": self.staging,
            "backup": self.backup,
            "old": self.old,
            "new": self.new,
        }


@dataclass
class _State:
    """The run's phase (staging, swapping, committed, idle) and its entries; `leftovers` are old
    folders of earlier runs that could not be removed yet (retried, with a warning, every run)."""

    phase: str
    entries: list[_Entry]
    leftovers: list[_Entry] = field(default_factory=list)


class _StateFile:
    """`<out>/.gpuplatform.lock`: the flock every run holds, and the record of the run in progress.

    Empty when no run is in progress. A record is one JSON line written in place (one small write,
    then fsync); a torn tail after it is ignored. Every record is sealed with this user's state key
    and acted on only when its MAC verifies (`state_key.py`): a record is never taken from elsewhere.
    """

    def __init__(self, out: Path, fd: int) -> None:
        self.out = out
        self.fd = fd
        self.key = current().state_key()

    @property
    def path(self) -> Path:
        return self.out / STATE_FILE

    def read(self) -> _State | None:
        data = os.pread(self.fd, 1 << 20, 0)
        if not data.strip(b"\0 \n"):
            return None
        try:
            doc = json.loads(data.split(b"\n", 1)[0])
        except (ValueError, UnicodeDecodeError):
            doc = None
        if not isinstance(doc, dict) or doc.get("format") != _STATE_FORMAT:
            raise InputError.single(
                str(self.path),
                "",
                "holds data gpuplatform did not write; if no other tool uses it, remove it and run again",
            )
        problems = state_problems(doc, self.out, str(self.path)) + mac_problems(doc, self.key, str(self.path))
        if problems:
            raise InputError(problems)
        entries = [_Entry(**e) for e in doc["entries"]]
        return _State(doc["phase"], entries, [_Entry(**e) for e in doc.get("leftovers", [])])

    def write(self, state: _State | None) -> None:
        if state is None:
            os.ftruncate(self.fd, 0)
        else:
            doc = {
                "format": _STATE_FORMAT,
                "phase": state.phase,
                "entries": [e.as_dict() for e in state.entries],
                "leftovers": [e.as_dict() for e in state.leftovers],
            }
            data = (json.dumps(seal(doc, self.key), separators=(",", ":")) + "\n").encode()
            os.pwrite(self.fd, data, 0)
            os.ftruncate(self.fd, len(data))
        os.fsync(self.fd)


def _open_state(out: Path) -> int:
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd = os.open(
            out / STATE_FILE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644
        )
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InputError.single(
                str(out / STATE_FILE), "", "is a symbolic link; gpuplatform locks only a file it created"
            ) from None
        if exc.errno in (errno.ENOTDIR, errno.EEXIST, errno.ENAMETOOLONG, errno.ENOENT):
            raise InputError.single(
                str(out), "", f"cannot be used as the output folder: {exc.strerror}"
            ) from None
        raise _fail(Path(exc.filename) if exc.filename else out, "cannot write the output", exc) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise InputError.single(
            str(out / STATE_FILE), "", "is not a regular file; gpuplatform locks only a file it created"
        )
    return fd


@contextlib.contextmanager
def exclusive_output(out: Path, timeout: float = LOCK_TIMEOUT_SECONDS) -> Iterator[_StateFile]:
    """Hold the output folder's lock; wait up to `timeout` seconds for another synth to finish."""
    fd = _open_state(out)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise InputError.single(
                        str(out),
                        "",
                        f"another gpuplatform synth holds the lock on this folder (waited {timeout:g}s)",
                    ) from None
                time.sleep(0.05)
        try:
            yield _StateFile(out, fd)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


# --- removing and restoring ---------------------------------------------------------------------


def _remove(path: Path, warnings: list[Problem]) -> bool:
    """Remove a folder of ours (never through a link); False, with a warning, when it is still there."""
    if not os.path.lexists(path):
        return True
    if path.is_symlink() or not path.is_dir():
        warnings.append(
            Problem(str(path), "", "", "left in place: not a folder gpuplatform created", "warning")
        )
        return True

    def writable_parent(func: Callable[..., Any], target: str, _: object) -> None:
        parent = os.path.dirname(target)
        os.chmod(parent, os.stat(parent).st_mode | stat.S_IWUSR | stat.S_IXUSR)
        func(target)

    try:
        if sys.version_info >= (3, 12):
            shutil.rmtree(path, onexc=writable_parent)
        else:
            shutil.rmtree(path, onerror=writable_parent)
    except OSError as exc:
        warnings.append(
            Problem(
                str(path),
                "",
                "",
                f"could not remove an old tree (retried next run): {exc.strerror}",
                "warning",
            )
        )
        return False
    return True


def _roll_back(out: Path, entry: _Entry, warnings: list[Problem]) -> bool:
    """Put the tree that was at `<out>/<name>` before the run back there; True when the run's own
    folders may go (False when they may hold that tree: they stay, named in a warning)."""
    target, staging, backup = out / entry.name, out / entry.staging, out / entry.backup
    if entry.old is None:
        if entry.new is not None and _lock_digest(target) == entry.new:
            aside = staging if not os.path.lexists(staging) else backup
            if not os.path.lexists(aside):
                target.rename(aside)
        return True
    if _lock_digest(target) == entry.old:
        return True
    found = [p for p in (staging, backup) if _lock_digest(p) == entry.old]
    problem = ""
    if not found:
        problem = "the tree from before the interrupted run was not found"
    elif os.path.lexists(target) and _lock_digest(target) != entry.new:
        problem = f"is not gpuplatform's; the tree from before the interrupted run stays at {found[0]}"
    if problem:
        warnings.append(Problem(str(target), "", "", problem, "warning"))
        return False
    if os.path.lexists(target):
        target.rename(backup if found[0] == staging else staging)
    found[0].rename(target)
    return True


def _clean(out: Path, entries: list[_Entry], warnings: list[Problem]) -> list[_Entry]:
    """Remove the staging and backup folders of `entries`; the entries where one is still there."""
    kept = []
    for entry in entries:
        removed = [_remove(out / name, warnings) for name in (entry.staging, entry.backup)]
        if not all(removed):
            kept.append(entry)
    return kept


def _finish(state: _StateFile, recorded: _State, warnings: list[Problem]) -> list[_Entry]:
    """Complete a recorded run: clean up after "committed", else restore every platform first.

    Folders that cannot be removed stay recorded as leftovers (returned), retried by the next run.
    """
    done = recorded.entries
    if recorded.phase not in ("committed", "idle"):
        done = [e for e in reversed(recorded.entries) if _roll_back(state.out, e, warnings)]
    leftovers = _clean(state.out, done + recorded.leftovers, warnings)
    _fsync_dir(state.out)
    state.write(_State("idle", [], leftovers) if leftovers else None)
    return leftovers


#: A staging or backup folder name of any run: its kind, run id and platform.
_LEFT = re.compile(rf"({re.escape(STAGING)}|{re.escape(BACKUP)})\.[0-9a-f]{{16}}\.(.+)")


def _left_folders(out: Path) -> dict[str, list[Path]]:
    """Platform -> the staging and backup folders of earlier runs in `out` that this user created
    (real folders, this user's, named the writer's way for a platform name), backups first."""
    found: dict[str, list[Path]] = {}
    for entry in sorted(os.scandir(out), key=lambda e: (not e.name.startswith(BACKUP), e.name)):
        match = _LEFT.fullmatch(entry.name)
        if match is None or not is_dns_label(match.group(2)) or not entry.is_dir(follow_symlinks=False):
            continue
        if entry.stat(follow_symlinks=False).st_uid == os.geteuid():
            found.setdefault(match.group(2), []).append(out / entry.name)
    return found


def _recover_from_disk(out: Path, warnings: list[Problem]) -> None:
    """Undo a killed run without trusting its record (`synth --recover`): a platform whose place holds
    a tree keeps it; an empty place gets back the one complete tree a backup folder holds. The
    other staging and backup folders go. A tree at a platform's place is never moved or removed."""
    for name, folders in sorted(_left_folders(out).items()):
        target = out / name
        if not os.path.lexists(target):
            backups = [f for f in folders if f.name.startswith(BACKUP)]
            complete = [f for f in backups if isinstance(owned_tree(f, name, digests=True), OwnedTree)]
            if len(complete) > 1 or (backups and not complete):
                what = "several complete trees" if complete else "no complete tree"
                warnings.append(
                    Problem(str(target), "", "", f"left as is: its backup folders hold {what}", "warning")
                )
                continue
            if complete:
                complete[0].rename(target)
                folders.remove(complete[0])
                warnings.append(Problem(str(target), "", "", f"restored from {complete[0].name}", "warning"))
        for folder in folders:
            _remove(folder, warnings)
    _fsync_dir(out)


def recover(state: _StateFile, *, from_disk: bool = False) -> list[Problem]:
    """Finish or undo what a killed run recorded (call with the lock held); warnings for leftovers.
    `from_disk`: the record is not read at all (it may be sealed with a key that is gone): the run's
    folders are judged by what they hold (`_recover_from_disk`)."""
    warnings: list[Problem] = []
    if from_disk:
        try:
            _recover_from_disk(state.out, warnings)
        except OSError as exc:
            raise _fail(state.out, "cannot recover the interrupted run's folders", exc) from None
        state.write(None)
        return warnings
    recorded = state.read()
    if recorded is not None:
        try:
            _finish(state, recorded, warnings)
        except OSError as exc:
            raise _fail(state.path, "cannot finish the interrupted run it records", exc) from None
    return warnings


# --- one run ---------------------------------------------------------------------------------------


def _unchanged(path: str, data: bytes) -> bool:
    """Whether `path` is a regular file (not reached through a link, with no other hard link)
    holding exactly `data`, with no more permission than the 0644 we create files with."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if (
            not stat.S_ISREG(info.st_mode)
            or info.st_nlink != 1
            or info.st_size != len(data)
            or stat.S_IMODE(info.st_mode) & ~0o644
        ):
            return False
        return handle.read(len(data) + 1) == data


def _link(source: str, target: str) -> bool:
    try:
        os.link(source, target, follow_symlinks=False)
    except OSError:
        return False
    return True


def _create(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def _write_files(root: Path, files: Mapping[str, bytes], current: Path | None) -> None:
    """Create every file of `files` under the folder `root`, never through a link.

    A file whose bytes the `current` tree already holds is staged as a hard link to it: no data is
    written and no inode is allocated, and removing the old tree after the swap frees none. (Creating
    files right after many were freed is slow on ext4, which skips recently deleted inodes: a
    re-synth of 19,000 files that deleted and recreated them took 7-17 s instead of 0.7 s.) The old
    tree is never written to, so rolling back to it is unaffected; a file that cannot be linked is
    written.

    The folders are made first; then two threads create the files, each in its own half of the
    folders (creating files is kernel work, done outside the interpreter lock; in one folder the
    kernel would serialise them). A failure in either stops both and is raised.
    """
    new, old = os.fspath(root), None if current is None else os.fspath(current)
    for parent in sorted({rel.rpartition("/")[0] for rel in files} - {""}):
        os.makedirs(f"{new}/{parent}", exist_ok=True)
    items = list(files.items())
    half = len(items) // 2
    failed = threading.Event()
    with ThreadPoolExecutor(max_workers=1) as pool:
        second = pool.submit(_stage, new, old, items[half:], failed)
        try:
            _stage(new, old, items[:half], failed)
            crash_hook("writing")
        except BaseException:
            failed.set()
            raise
        second.result()


def _stage(new: str, old: str | None, items: list[tuple[str, bytes]], failed: threading.Event) -> None:
    """Stage `items` under `new` (linked from `old` when unchanged) until done or `failed` is set."""
    try:
        for rel, data in items:
            if failed.is_set():
                return
            path = f"{new}/{rel}"
            if not (old is not None and _unchanged(f"{old}/{rel}", data) and _link(f"{old}/{rel}", path)):
                _create(path, data)
    except BaseException:
        failed.set()
        raise


def _plan(out: Path, trees: Collection[str], prune: bool) -> tuple[list[_Entry], list[Problem]]:
    """Check every target (the platforms of `trees`) and prune candidate before anything changes;
    the run's entries, whose new lock digests are set once the trees are staged."""
    run = secrets.token_hex(8)
    entries: list[_Entry] = []
    problems: list[Problem] = []
    warnings: list[Problem] = []

    def entry(name: str, old: str | None, new: str | None) -> _Entry:
        return _Entry(name, f"{STAGING}.{run}.{name}", f"{BACKUP}.{run}.{name}", old, new)

    for name in sorted(trees):
        target = out / name
        old = None
        if os.path.lexists(target):
            owned = owned_tree(target, name)
            if isinstance(owned, str):
                problems.append(
                    Problem(
                        str(target), "", "", f"{owned}: gpuplatform did not create it and will not replace it"
                    )
                )
                continue
            old = owned.lock_digest
        entries.append(entry(name, old, None))
    if prune:
        for candidate in sorted(out.iterdir()):
            name = candidate.name
            if name in trees or name.startswith(".") or not os.path.lexists(candidate / LOCK_FILE):
                continue
            owned = owned_tree(candidate, name, digests=True)
            if isinstance(owned, str):
                warnings.append(Problem(str(candidate), "", "", f"not pruned: {owned}", "warning"))
            else:
                entries.append(entry(name, owned.lock_digest, None))
    if problems:
        raise InputError(problems)
    return entries, warnings


def _swap(out: Path, entry: _Entry) -> None:
    target, staging, backup = out / entry.name, out / entry.staging, out / entry.backup
    if entry.new is None:
        target.rename(backup)
    elif entry.old is None:
        staging.rename(target)
    elif not _exchange(staging, target):
        target.rename(backup)
        crash_hook("moved-old")
        staging.rename(target)
    crash_hook("swapped")


def write_trees(
    out: Path,
    trees: Mapping[str, Mapping[str, bytes]],
    *,
    prune: bool = False,
    timeout: float = LOCK_TIMEOUT_SECONDS,
    rest: Callable[[], Mapping[str, Mapping[str, bytes]]] | None = None,
    recover_from_disk: bool = False,
) -> list[Problem]:
    """Replace `<out>/<name>` by each of `trees` (and, with `prune`, remove our trees not in it),
    all or nothing. Returns warnings (leftovers that could not be removed, trees not pruned).
    `recover_from_disk`: recover a killed run from its folders, not from its record (`recover`).

    `rest`, when given, returns more files of the same platforms, none of them in `trees`: it is
    called once `trees` are staged, so that a caller can compute them meanwhile (synth's child
    renders the runbooks and the lock files while the waves are staged). Each platform's
    `gpuplatform.lock.json` is in `trees` or in `rest`. An error `rest` raises undoes the run.

    InputError when a target is not ours (nothing changes); EnvironmentFailure when the machine
    refuses a write (every platform is restored first).
    """
    refuse_linked_folder(out)
    with exclusive_output(out, timeout) as state, contextlib.ExitStack() as late:
        warnings = recover(state, from_disk=recover_from_disk)
        leftovers = (state.read() or _State("idle", [])).leftovers
        entries, found = _plan(out, trees, prune)
        warnings += found
        # Staging records no new lock digest: the new trees are known only once staged, and the
        # digest is first read when a swap may have happened (`_roll_back`, from "swapping" on).
        recorded = _State("staging", entries, leftovers)
        staged = [e for e in entries if e.name in trees]
        interrupts: list[int] = []
        try:
            state.write(recorded)
            current = {e.name: out / e.name if e.old else None for e in staged}
            for e in staged:
                os.mkdir(out / e.staging, 0o755)
                _write_files(out / e.staging, trees[e.name], current[e.name])
            more = rest() if rest is not None else {}
            for e in staged:
                extra = more.get(e.name, {})
                _write_files(out / e.staging, extra, current[e.name])
                lock = extra[LOCK_FILE] if LOCK_FILE in extra else trees[e.name][LOCK_FILE]
                e.new = _digest(bytes(lock))
            _sync_filesystem(out)
            crash_hook("staged")
            interrupts = late.enter_context(_sigint_deferred())
            recorded.phase = "swapping"
            state.write(recorded)
            for e in entries:
                _swap(out, e)
            _fsync_dir(out)
            state.write(_State("committed", entries, leftovers))
            recorded.phase = "committed"
            crash_hook("committed")
        except BaseException as exc:
            try:
                _finish(state, recorded, warnings)
            except OSError as undo:
                raise _fail(
                    state.path, "the run failed and could not be undone; the next run will", undo
                ) from exc
            if isinstance(exc, OSError):
                where = Path(exc.filename) if exc.filename else out
                raise _fail(where, "cannot write the output (nothing was changed)", exc) from None
            raise
        _finish(state, recorded, warnings)
        if interrupts:
            warnings.append(Problem(str(out), "", "", _LATE_INTERRUPT, "warning"))
    return warnings


_LATE_INTERRUPT = (
    "interrupted (SIGINT) while the new trees were swapped in: the run was completed, not undone"
)


@contextlib.contextmanager
def _sigint_deferred() -> Iterator[list[int]]:
    """Hold SIGINT (in the main thread, where Python handles it) until the block ends; the signals
    received. From the swap on, finishing is quicker and safer than undoing: a run interrupted
    there ends with every new tree in place and the old ones removed, as if it came a moment later."""
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return
    previous = signal.signal(signal.SIGINT, lambda signum, _: received.append(signum))
    try:
        yield received
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)
