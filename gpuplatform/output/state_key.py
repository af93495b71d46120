"""The key that proves a record of the state file was written here, by this user on this machine.

A record names folders that recovery renames and removes, and a well-formed one from a pull request
(the repository commits `dist/.gpuplatform.lock`) or another machine looks on disk just like an
interrupted run. So every record the writer saves carries `mac`, an HMAC-SHA256 of its canonical
JSON keyed by a secret kept outside any repository, `$XDG_STATE_HOME/gpuplatform/state-key`
(default `~/.local/state/gpuplatform/state-key`), and recovery acts on no record whose MAC does not
verify. The key is created 0600 in a folder created 0700 on first use, never read through a link,
and refused, with the reason, when the key or its folder belongs to another user, is open to others
or is a link.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import json
import os
import re
import secrets
import stat
from pathlib import Path
from typing import Any

from gpuplatform.errors import EnvironmentFailure, InputError, Problem

__all__ = ["key_path", "mac_problems", "seal", "state_key"]

_KEY = re.compile(rb"[0-9a-f]{64}\n")
_MAC = "hmac-sha256:"


def key_path() -> Path:
    """`$XDG_STATE_HOME/gpuplatform/state-key`; under `~/.local/state` when the variable is unset,
    empty or relative (the XDG base directory specification ignores a relative path)."""
    base = os.environ.get("XDG_STATE_HOME", "")
    root = Path(base) if os.path.isabs(base) else Path.home() / ".local" / "state"
    return root / "gpuplatform" / "state-key"


def _refuse(path: Path, what: str) -> InputError:
    return InputError.single(str(path), "", f"{what}; gpuplatform uses a state key only its owner can read")


def _machine(path: Path, what: str, exc: OSError) -> EnvironmentFailure:
    """The machine refused the key (exit 74), with where to keep it instead."""
    reason = f"{exc.strerror or type(exc).__name__} (set XDG_STATE_HOME to a writable folder of your own)"
    return EnvironmentFailure(str(path), what, reason)


def _check_folder(folder: Path) -> None:
    """Refuse a key folder that is a link, not a folder, not this user's or open to others: whoever
    owns or may write it could plant the key, and a planted key makes a forged record verify."""
    try:
        info = os.lstat(folder)
    except (FileNotFoundError, NotADirectoryError):
        return  # created below, or the machine refuses that (exit 74)
    except OSError as exc:
        raise _machine(folder, "cannot read the state key's folder", exc) from None
    if stat.S_ISLNK(info.st_mode):
        raise _refuse(folder, "is a symbolic link")
    if not stat.S_ISDIR(info.st_mode):
        raise _refuse(folder, "is not a folder")
    _check_owner(folder, info)
    if info.st_mode & 0o077:
        raise _refuse(
            folder,
            f"is open to other users (mode {stat.S_IMODE(info.st_mode):o}): `chmod 700 {folder}` "
            "(and remove the key in it if others could have written it)",
        )


def _check_owner(path: Path, info: os.stat_result) -> None:
    if info.st_uid != os.geteuid():
        raise _refuse(
            path,
            f"is owned by uid {info.st_uid}, not by this user (uid {os.geteuid()}): another user could have "
            "planted it; remove it, or point XDG_STATE_HOME at a folder of your own",
        )


def _read(path: Path) -> bytes | None:
    """The key in `path`, None when there is none; InputError when it is not one we can trust."""
    _check_folder(path.parent)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _refuse(path, "is a symbolic link") from None
        raise _machine(path, "cannot read the state key", exc) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _refuse(path, "is not a regular file")
        _check_owner(path, info)
        if info.st_mode & 0o077:
            raise _refuse(
                path,
                f"is open to other users (mode {stat.S_IMODE(info.st_mode):o}; others may know it): "
                "remove it, the next run creates a new one",
            )
        data = os.read(fd, 66)
    finally:
        os.close(fd)
    if _KEY.fullmatch(data) is None:
        raise _refuse(path, "is not a key gpuplatform wrote (64 hex digits): remove it")
    return bytes.fromhex(data[:64].decode())


def _create(path: Path) -> None:
    """Create the key, whole or not at all: written 0600 under a temporary name, then linked into
    place (a concurrent run's key, linked first, wins)."""
    temporary = path.with_name(f"{path.name}.{secrets.token_hex(8)}")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(secrets.token_hex(32).encode() + b"\n")
                handle.flush()
                os.fsync(fd)
            with contextlib.suppress(FileExistsError):
                os.link(temporary, path, follow_symlinks=False)
        finally:
            os.unlink(temporary)
        folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
    except OSError as exc:
        raise _machine(path, "cannot create the state key", exc) from None


def state_key() -> bytes:
    """This user's key, created on first use; InputError when the key file is a link, open to other
    users or not a key; EnvironmentFailure when it cannot be read or created."""
    path = key_path()
    key = _read(path)
    if key is None:
        _create(path)
        key = _read(path)
    assert key is not None
    return key


def _mac(doc: dict[str, Any], key: bytes) -> str:
    canonical = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return _MAC + hmac.new(key, canonical.encode(), hashlib.sha256).hexdigest()


def seal(doc: dict[str, Any], key: bytes) -> dict[str, Any]:
    """`doc` (a record, without `mac`) with its `mac`."""
    return doc | {"mac": _mac(doc, key)}


def mac_problems(doc: dict[str, Any], key: bytes, file: str) -> list[Problem]:
    """One problem unless `doc`, the parsed record of the state file `file`, carries a valid `mac`."""
    mac = doc.get("mac")
    expected = _mac({k: v for k, v in doc.items() if k != "mac"}, key)
    if isinstance(mac, str) and hmac.compare_digest(mac.encode(), expected.encode()):
        return []
    what = "has no MAC" if mac is None else "its MAC does not match"
    return [
        Problem(
            file,
            "mac",
            "",
            f"{what}: this record was not written by gpuplatform for this user on this machine (key "
            f"{key_path()}); it may come from a pull request, another machine or an edit. Nothing was changed",
            hint="if no synth of yours was interrupted in this folder, inspect the file, remove it and "
            "run again (the trees are in Git); if one was, and its key is gone (a library call's key is "
            "its process's), `synth --check` lists the folders it left and `synth --recover` recovers "
            "them from what they hold, without the record",
        )
    ]
