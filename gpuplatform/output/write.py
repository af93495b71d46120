"""Crash-consistent replacement of `<out>/<platform>/` trees, one synth at a time.

Protocol: take an exclusive lock on `<out>/.gpuplatform.lock`; recover what a killed run left;
write the new tree to `<out>/.<platform>.new`; exchange it with `<out>/<platform>` atomically
(renameat2 RENAME_EXCHANGE where the kernel has it, else two renames with `.old` as the fallback
that recovery restores); remove the old tree. At every instant a complete tree is at
`<out>/<platform>` or, between the two fallback renames, at `<out>/.<platform>.old`.

Test hook: `GPUPLATFORM_CRASH_AT=<point>` ends the process with `os._exit(86)` at that named point
(`writing`, `staged`, `moved-old`, `swapped`), so tests/test_crash_consistency.py can kill a run there.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
import shutil
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from gpuplatform.errors import InputError
from gpuplatform.output.serialize import LOCK_FILE

__all__ = ["LOCK_TIMEOUT_SECONDS", "exclusive_output", "recover", "remove_tree", "replace_tree"]

LOCK_TIMEOUT_SECONDS = 30.0
CRASH_AT_ENV = "GPUPLATFORM_CRASH_AT"
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _crash_point(point: str) -> None:
    """Tests only: die here, as a killed run would, when CRASH_AT_ENV names `point`."""
    if os.environ.get(CRASH_AT_ENV) == point:
        os._exit(86)


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths; False where renameat2 is not available."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    rc = renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), str(b))


@contextlib.contextmanager
def exclusive_output(out: Path, timeout: float = LOCK_TIMEOUT_SECONDS) -> Iterator[None]:
    """Hold the output folder's lock; wait up to `timeout` seconds for another synth to finish."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        handle = open(out / ".gpuplatform.lock", "a+")  # noqa: SIM115 (closed by the `with` below)
    except OSError as exc:
        raise InputError.single(
            str(out), "", f"cannot be used as the output folder: {exc.strerror}"
        ) from None
    with handle:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
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
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def recover(out: Path) -> None:
    """Finish or undo whatever a killed run left in `out` (call with the lock held)."""
    if not out.is_dir():
        return
    for entry in sorted(out.iterdir()):
        name = entry.name
        if name.startswith(".") and name.endswith(".old"):
            target = out / name[1:-4]
            if target.exists():
                shutil.rmtree(entry)
            else:
                entry.rename(target)
        elif name.startswith(".") and name.endswith(".new"):
            shutil.rmtree(entry)


def _write_files(root: Path, files: Mapping[str, bytes]) -> None:
    for n, (rel, data) in enumerate(files.items()):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        if n == len(files) // 2:
            _crash_point("writing")


def replace_tree(out: Path, platform: str, files: Mapping[str, bytes]) -> None:
    """Replace `<out>/<platform>` by `files`; refuse a folder that has no lock file of ours."""
    target = out / platform
    if target.exists() and not (target / LOCK_FILE).is_file():
        raise InputError.single(
            str(target),
            "",
            f"exists but has no {LOCK_FILE}: gpuplatform did not create it and will not replace it",
        )
    staging = out / f".{platform}.new"
    if staging.exists():
        shutil.rmtree(staging)
    _write_files(staging, files)
    _crash_point("staged")
    if not target.exists():
        staging.rename(target)
        return
    if _exchange(staging, target):
        _crash_point("swapped")
        shutil.rmtree(staging)
        return
    old = out / f".{platform}.old"
    target.rename(old)
    _crash_point("moved-old")
    staging.rename(target)
    _crash_point("swapped")
    shutil.rmtree(old)


def remove_tree(out: Path, platform: str) -> None:
    """Remove a platform tree that no stack renders any more (only one with our lock file)."""
    target = out / platform
    if (target / LOCK_FILE).is_file():
        shutil.rmtree(target)
