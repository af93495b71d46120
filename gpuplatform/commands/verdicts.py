"""The simulation verdict `check` and `synth` include: reused from the verdict cache while the spec
and the SDK are unchanged, else replayed by a forked child while the command goes on.

The cache is the runtime's folder, none in a library call unless asked for; the CLI's is the
user's (`runtime.user_cache_folder()`), never the output folder: `check` has none, `dist/` must stay byte-equal to what `synth` writes, and a verdict
depends on the spec and the SDK only, not on where a tree is written. An entry is trusted only when
it is a regular file whose recorded key is the one computed now: the sha256 of the SDK version, the
package's own code and data, the stack's path (the hints name it), the spec document and the
manifests it names. With a `--snapshot`, the verdict depends on the cluster's pods too and is never
cached.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from functools import cache, partial
from pathlib import Path
from types import TracebackType
from typing import Any

from gpuplatform.background import Background
from gpuplatform.load.stacks import LoadedPlatform
from gpuplatform.render.tree import Tree
from gpuplatform.runtime import current
from gpuplatform.simulate.verdict import Refusal, simulation_verdicts
from gpuplatform.snapshot.read import Snapshot
from gpuplatform.versions import SDK_VERSION

__all__ = ["Simulated", "verdict_key"]

_PACKAGE = Path(__file__).resolve().parent.parent
_MAX_ENTRY_BYTES = 4 << 20

Verdicts = dict[str, tuple[Refusal, ...]]


@cache
def _code_digest() -> bytes:
    """sha256 of the package's modules and data (~20 ms): an edited checkout is another SDK."""
    digest = hashlib.sha256()
    for path in sorted(p for p in _PACKAGE.rglob("*") if p.suffix in (".py", ".json")):
        digest.update(path.relative_to(_PACKAGE).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.digest()


def verdict_key(loaded: LoadedPlatform) -> str:
    """The key of a platform's verdict: SDK version, package code, spec document and manifests, and
    the stack's path as given (a refusal's hint names it: another invocation's entry must never print
    its path)."""
    digest = hashlib.sha256(SDK_VERSION.encode() + b"\0" + _code_digest())
    digest.update(json.dumps([loaded.source, *loaded.overlays]).encode() + b"\0")
    digest.update(json.dumps(loaded.document, sort_keys=True, separators=(",", ":")).encode())
    digest.update(json.dumps(loaded.manifests, sort_keys=True).encode())
    return digest.hexdigest()


def _read(folder: Path, key: str) -> tuple[Refusal, ...] | None:
    """The cached verdict of `key`, or None when there is none or it cannot be verified."""
    try:
        fd = os.open(folder / f"{key}.json", os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as f:
            data: Any = json.loads(f.read(_MAX_ENTRY_BYTES + 1))
        refusals = data["refusals"]
        if data.get("key") != key or not isinstance(refusals, list):
            return None
        return tuple(Refusal(str(r["loc"]), str(r["message"]), str(r["hint"])) for r in refusals)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write(folder: Path, key: str, verdict: tuple[Refusal, ...]) -> None:
    """Store a verdict atomically (a rename); a folder that cannot be written only costs the reuse."""
    entry = {
        "key": key,
        "sdkVersion": SDK_VERSION,
        "refusals": [{"loc": r.loc, "message": r.message, "hint": r.hint} for r in verdict],
    }
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=folder, suffix=".tmp", delete=False) as f:
            json.dump(entry, f, sort_keys=True)
        os.replace(f.name, folder / f"{key}.json")
    except OSError:
        return


def _replay(loaded: Sequence[LoadedPlatform], trees: dict[str, Tree], snapshot: Snapshot | None) -> Verdicts:
    return simulation_verdicts(loaded, trees, snapshot)


class Simulated:
    """Every platform's simulation verdict: the cached ones at once, the others from a forked child.

    Use as a context manager around the work that runs meanwhile; `result()` waits for the child
    and stores what it computed.
    """

    def __init__(
        self,
        loaded: Sequence[LoadedPlatform],
        trees: dict[str, Tree] | None = None,
        snapshot: Snapshot | None = None,
    ) -> None:
        self._folder = current().cache if snapshot is None else None
        self._keys = {lp.platform.name: verdict_key(lp) for lp in loaded} if self._folder else {}
        self.known: Verdicts = {}
        if self._folder is not None:
            for name, key in self._keys.items():
                found = _read(self._folder, key)
                if found is not None:
                    self.known[name] = found
        missing = [lp for lp in loaded if lp.platform.name not in self.known]
        work = partial(_replay, missing, trees or {}, snapshot)
        self._child: Background[Verdicts] | None = Background(work) if missing else None

    def result(self) -> Verdicts:
        """Platform name -> its verdict (the child is waited for once)."""
        if self._child is None:
            return dict(self.known)
        computed = self._child.result()
        self._child = None
        if self._folder is not None:
            for name, verdict in computed.items():
                _write(self._folder, self._keys[name], verdict)
        self.known |= computed
        return dict(self.known)

    def __enter__(self) -> Simulated:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self._child is not None:
            self._child.stop()
