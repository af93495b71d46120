"""What a run may do beyond its result: fork children, keep a verdict cache, hold a state key.

A library call does none of it unless asked: `Runtime()` forks nothing, caches nothing and seals
the output folder's state records with a key of this process only, so `platform.synth(out)` in a
notebook writes `out` and nothing else. The CLI runs every command under `cli_runtime()`'s
choices (a second core, the user's cache folder, the user's state key); a library caller may do
the same with `using(...)` or a verb's own options.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache
from pathlib import Path

__all__ = ["CACHE_ENV", "Runtime", "current", "process_key", "user_cache_folder", "using"]

CACHE_ENV = "GPUPLATFORM_CACHE_DIR"


@cache
def process_key() -> bytes:
    """A state key of this process only: records it seals are refused by any other process, as a
    record from another machine is (an interrupted run is then cleaned up by hand)."""
    return secrets.token_bytes(32)


def user_cache_folder() -> Path | None:
    """The user's verdict cache, the CLI's: `$GPUPLATFORM_CACHE_DIR/verdicts` (the variable set
    empty: none), else `$XDG_CACHE_HOME/gpuplatform/verdicts`, else `~/.cache/gpuplatform/verdicts`."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit is not None:
        return Path(explicit) / "verdicts" if explicit else None
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gpuplatform" / "verdicts"


@dataclass(frozen=True)
class Runtime:
    """The side effects a run may have; the default has none."""

    fork: bool = False
    """Compute independent work in forked children (the second core)."""
    cache: Path | None = None
    """Folder of the simulation verdict cache; None: no cache."""
    state_key: Callable[[], bytes] = process_key
    """The key that seals the output folder's state records."""


_NONE = Runtime()
_CURRENT: ContextVar[Runtime] = ContextVar("gpuplatform_runtime", default=_NONE)


def current() -> Runtime:
    """The runtime of the calling context."""
    return _CURRENT.get()


@contextmanager
def using(runtime: Runtime) -> Iterator[Runtime]:
    """Run the block under `runtime`."""
    token = _CURRENT.set(runtime)
    try:
        yield runtime
    finally:
        _CURRENT.reset(token)
