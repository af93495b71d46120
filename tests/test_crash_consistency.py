"""A synth killed at any point of the write leaves the old or the new tree whole; the next run recovers."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gpuplatform.output.write import CRASH_AT_ENV
from tests.specs import minimal_spec, write_spec

#: Runs the CLI; with argv[1] == "no-exchange" it first disables renameat2, forcing the two-rename path.
_RUNNER = """
import sys
import gpuplatform.output.write as write
if sys.argv.pop(1) == "no-exchange":
    write._exchange = lambda a, b: False
from gpuplatform.cli import main
main()
"""


def _synth(spec: Path, out: Path, *, crash_at: str | None = None, exchange: bool = True) -> int:
    env = {k: v for k, v in os.environ.items() if k != CRASH_AT_ENV}
    if crash_at is not None:
        env[CRASH_AT_ENV] = crash_at
    mode = "exchange" if exchange else "no-exchange"
    cmd = [sys.executable, "-c", _RUNNER, mode, "synth", str(spec), "--out", str(out)]
    return subprocess.run(cmd, env=env, capture_output=True, timeout=120).returncode


def _complete_tree(root: Path) -> str | None:
    """The active wave of the tree at `root` if every file its lock lists is there with its digest."""
    lock = root / "gpuplatform.lock.json"
    if not lock.is_file():
        return None
    doc: dict[str, Any] = json.loads(lock.read_text())
    for rel, digest in doc["files"].items():
        path = root / rel
        if not path.is_file() or "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            return None
    on_disk = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}
    if on_disk != set(doc["files"]) | {"gpuplatform.lock.json"}:
        return None
    wave: str = doc["activeWave"]
    return wave


def _specs(tmp_path: Path) -> tuple[Path, Path]:
    old, new = minimal_spec(), minimal_spec()
    new["spec"]["activeWave"] = "claims"
    return write_spec(tmp_path / "old.yaml", old), write_spec(tmp_path / "new.yaml", new)


POINTS = [("writing", True), ("staged", True), ("swapped", True), ("moved-old", False), ("swapped", False)]


@pytest.mark.parametrize(
    ("point", "exchange"), POINTS, ids=[f"{p}-{'exchange' if e else 'renames'}" for p, e in POINTS]
)
def test_a_killed_synth_leaves_a_whole_tree_and_the_next_run_recovers(
    tmp_path: Path, point: str, exchange: bool
) -> None:
    # GIVEN a complete tree rendered from the old spec
    old, new = _specs(tmp_path)
    out = tmp_path / "out"
    assert _synth(old, out) == 0
    assert _complete_tree(out / "lab") == "pilot"
    # WHEN a synth of the new spec is killed at `point`
    assert _synth(new, out, crash_at=point, exchange=exchange) == 86
    # THEN the old or the new tree is complete, at its place or at the fallback name recovery restores
    found = {name: _complete_tree(out / name) for name in ("lab", ".lab.old")}
    assert set(found.values()) & {"pilot", "claims"}, found
    if found["lab"] is None:
        assert found[".lab.old"] == "pilot"
    # AND the next run recovers and leaves exactly the new tree, no staging or fallback folders
    assert _synth(new, out) == 0
    assert _complete_tree(out / "lab") == "claims"
    assert sorted(p.name for p in out.iterdir()) == [".gpuplatform.lock", "lab"]


def test_recovery_alone_restores_the_old_tree_after_a_crash_between_renames(tmp_path: Path) -> None:
    # GIVEN a run killed after moving the old tree aside and before moving the new one in
    old, new = _specs(tmp_path)
    out = tmp_path / "out"
    assert _synth(old, out) == 0
    assert _synth(new, out, crash_at="moved-old", exchange=False) == 86
    assert not (out / "lab").exists()
    # WHEN the old spec is synthesised again
    assert _synth(old, out) == 0
    # THEN the old tree is back in place and nothing else is left
    assert _complete_tree(out / "lab") == "pilot"
    assert sorted(p.name for p in out.iterdir()) == [".gpuplatform.lock", "lab"]
