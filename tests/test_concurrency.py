"""Two synths on one output folder: a lock serialises them and the tree is never a mix."""

from __future__ import annotations

import fcntl
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpuplatform.errors import InputError
from gpuplatform.output.write import exclusive_output
from tests.specs import minimal_spec, write_spec
from tests.test_crash_consistency import _complete_tree

_GPUPLATFORM = [sys.executable, "-m", "gpuplatform.cli"]


def _hold_lock(out: Path, seconds: float) -> subprocess.Popen[bytes]:
    """Another process that holds the output folder's lock for `seconds`."""
    code = (
        "import fcntl, sys, time\n"
        f"h = open({str(out / '.gpuplatform.lock')!r}, 'a+')\n"
        "fcntl.flock(h, fcntl.LOCK_EX)\n"
        "print('locked', flush=True)\n"
        f"time.sleep({seconds})\n"
    )
    out.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    assert holder.stdout is not None and holder.stdout.readline() == b"locked\n"
    return holder


def test_a_second_writer_fails_clearly_when_the_lock_is_not_released(tmp_path: Path) -> None:
    holder = _hold_lock(tmp_path / "out", 10)
    try:
        with pytest.raises(InputError) as caught, exclusive_output(tmp_path / "out", timeout=0.3):
            pass
        assert "another gpuplatform synth holds the lock" in str(caught.value)
    finally:
        holder.kill()
        holder.wait()


def test_synth_waits_for_a_running_synth_and_then_writes(tmp_path: Path) -> None:
    # GIVEN another process holding the lock for one second
    out = tmp_path / "out"
    spec = write_spec(tmp_path / "lab.yaml", minimal_spec())
    holder = _hold_lock(out, 1.0)
    started = time.monotonic()
    # WHEN synth runs
    result = subprocess.run(
        [*_GPUPLATFORM, "synth", str(spec), "--out", str(out)], capture_output=True, timeout=60
    )
    holder.wait()
    # THEN it waited for the lock, then wrote a complete tree
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - started >= 0.9
    assert _complete_tree(out / "lab") == "pilot"


def test_concurrent_synths_leave_one_complete_tree(tmp_path: Path) -> None:
    # GIVEN four specs that differ in their active wave
    out = tmp_path / "out"
    waves = ["base", "pilot", "claims", "cutover"]
    specs = []
    for wave in waves:
        doc = minimal_spec()
        doc["spec"]["activeWave"] = wave
        specs.append(write_spec(tmp_path / f"{wave}.yaml", doc))
    # WHEN they are synthesised into the same folder at the same time
    runs = [
        subprocess.Popen([*_GPUPLATFORM, "synth", str(s), "--out", str(out)], stderr=subprocess.PIPE)
        for s in specs
    ]
    codes = [r.wait(timeout=120) for r in runs]
    # THEN every run succeeded and the folder holds exactly one of the trees, whole
    assert codes == [0, 0, 0, 0]
    assert _complete_tree(out / "lab") in waves
    assert sorted(p.name for p in out.iterdir()) == [".gpuplatform.lock", "lab"]
    with open(out / ".gpuplatform.lock") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises if a run still held it
