"""A synth killed at any point of the write leaves the old or the new tree whole; the next run recovers."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gpuplatform.errors import InputError
from gpuplatform.load.stacks import load_stack
from gpuplatform.output.state_key import key_path, mac_problems, state_key
from gpuplatform.output.write import exclusive_output, recover
from gpuplatform.runtime import Runtime, using
from tests.specs import minimal_spec, python_stack, write_spec

#: Runs the CLI: argv[1] "exchange" or "no-exchange" (renameat2 disabled: the two-rename path);
#: argv[2] a crash point (or "-") and argv[3] at which of its occurrences the run dies.
_RUNNER = """
import os, sys
import gpuplatform.output.write as write
mode, point, nth = sys.argv[1:4]
del sys.argv[1:4]
if mode == "no-exchange":
    write._exchange = lambda a, b: False
seen = []
def hook(name):
    if name == point:
        seen.append(name)
        if len(seen) == int(nth):
            os._exit(86)
write.crash_hook = hook
from gpuplatform.cli import main
main()
"""

#: runs killed in one process are recovered by the next, as the CLI does with the user's key
pytestmark = pytest.mark.usefixtures("cli_runtime")


def _synth(spec: Path, out: Path, *, crash_at: str | None = None, exchange: bool = True, nth: int = 1) -> int:
    mode = "exchange" if exchange else "no-exchange"
    cmd = [
        sys.executable,
        "-c",
        _RUNNER,
        mode,
        crash_at or "-",
        str(nth),
        "synth",
        str(spec),
        "--out",
        str(out),
    ]
    return subprocess.run(cmd, capture_output=True, timeout=120).returncode


def _complete_tree(root: Path) -> str | None:
    """The active wave of the tree at `root` if every file its lock lists is there with its digest."""
    lock = root / "gpuplatform.lock.json"
    if not lock.is_file():
        return None
    try:  # a run killed while it wrote the lock file leaves it cut short: that tree is not complete
        doc: dict[str, Any] = json.loads(lock.read_text())
    except ValueError:
        return None
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


POINTS = [
    ("writing", True),
    ("writing-late", True),
    ("staged", True),
    ("swapped", True),
    ("committed", True),
    ("moved-old", False),
    ("swapped", False),
]


def _recorded_trees(out: Path) -> dict[str, str | None]:
    """The complete trees in `out`: at their place or at a name the state file records."""
    found = {p.name: _complete_tree(p) for p in out.iterdir() if p.is_dir()}
    return {name: wave for name, wave in found.items() if wave is not None}


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
    # WHEN a synth of the new spec is killed at `point` (writing-late: while it stages the files
    # computed meanwhile, the runbooks and the lock file)
    if point == "writing-late":
        assert _synth(new, out, crash_at="writing", nth=2, exchange=exchange) == 86
    else:
        assert _synth(new, out, crash_at=point, exchange=exchange) == 86
    # THEN the old or the new tree is complete, at its place or at the backup name the state records
    found = _recorded_trees(out)
    assert set(found.values()) & {"pilot", "claims"}, found
    if "lab" not in found:
        state = (out / ".gpuplatform.lock").read_text()
        assert any(name in state for name, wave in found.items() if wave == "pilot"), (found, state)
    # AND the next run recovers and leaves exactly the new tree, no staging or backup folders
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


@pytest.mark.parametrize("exchange", [True, False], ids=["exchange", "renames"])
def test_a_run_killed_between_two_platforms_is_rolled_back_for_both(tmp_path: Path, exchange: bool) -> None:
    # GIVEN two platforms of one stack written from the old wave
    out = tmp_path / "out"
    assert _synth(python_stack(tmp_path / "old.py", names=("one", "two"), wave="pilot"), out) == 0
    # WHEN a run of the new wave dies right after the first platform went in
    new = python_stack(tmp_path / "new.py", names=("one", "two"), wave="claims")
    assert _synth(new, out, crash_at="swapped", exchange=exchange) == 86
    assert _complete_tree(out / "one") == "claims"
    # THEN recovery (the first step of the next run) restores both platforms, not only the second
    with exclusive_output(out) as state:
        assert recover(state) == []
    assert (_complete_tree(out / "one"), _complete_tree(out / "two")) == ("pilot", "pilot")
    assert sorted(p.name for p in out.iterdir()) == [".gpuplatform.lock", "one", "two"]


@pytest.mark.parametrize(
    ("point", "nth", "recorded"),
    [("writing", 2, False), ("staged", 1, False), ("moved-old", 1, True)],
    ids=["staging-the-lock", "staged", "swapping"],
)
def test_the_new_lock_digest_is_recorded_with_the_swapping_phase(
    tmp_path: Path, point: str, nth: int, recorded: bool
) -> None:
    # GIVEN a complete tree rendered from the old spec
    old, new = _specs(tmp_path)
    out = tmp_path / "out"
    assert _synth(old, out) == 0
    # WHEN a synth of the new spec is killed while it stages, once it staged, or while it swaps
    assert _synth(new, out, crash_at=point, nth=nth, exchange=False) == 86
    # THEN the record names the new tree's lock digest only from "swapping" on: before, no swap
    # happened and recovery needs it not; the killed child sealed it with this session's key
    state = json.loads((out / ".gpuplatform.lock").read_text())
    assert mac_problems(state, state_key(), "state") == []
    (entry,) = state["entries"]
    assert state["phase"] == ("swapping" if recorded else "staging")
    lock = out / entry["staging"] / "gpuplatform.lock.json"
    assert entry["new"] == ("sha256:" + hashlib.sha256(lock.read_bytes()).hexdigest() if recorded else None)


def test_synth_check_shows_what_a_killed_run_left(tmp_path: Path) -> None:
    # GIVEN a tree current with its spec, then a synth of the same spec killed once it staged (issue 39)
    old, _ = _specs(tmp_path)
    out = tmp_path / "out"
    assert _synth(old, out) == 0
    assert _check(old, out).returncode == 0
    assert _synth(old, out, crash_at="staged") == 86
    # WHEN --check runs / THEN the leftover staging folder and the state record are stale, named
    checked = _check(old, out)
    assert checked.returncode == 1
    assert "interrupted: " in checked.stderr and ".gpuplatform-staging." in checked.stderr
    assert f"interrupted: {out / '.gpuplatform.lock'}" in checked.stderr
    # AND the next synth recovers with the same key, and --check is clean again
    assert _synth(old, out) == 0
    assert _check(old, out).returncode == 0


def _check(spec: Path, out: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "gpuplatform.cli", "synth", str(spec), "--out", str(out), "--check"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def _synth_recover(spec: Path, out: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "gpuplatform.cli", "synth", str(spec), "--out", str(out), "--recover"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize(
    ("point", "exchange"), POINTS, ids=[f"{p}-{'exchange' if e else 'renames'}" for p, e in POINTS]
)
def test_a_killed_run_whose_key_is_gone_is_recovered_from_its_folders(
    tmp_path: Path, point: str, exchange: bool
) -> None:
    # GIVEN a synth killed at `point`, and then the state key replaced (issue 39: a new key)
    old, new = _specs(tmp_path)
    out = tmp_path / "out"
    assert _synth(old, out) == 0
    nth = 2 if point == "writing-late" else 1
    assert _synth(new, out, crash_at=point.removesuffix("-late"), exchange=exchange, nth=nth) == 86
    key_path().unlink()
    # WHEN the next run starts / THEN it refuses the record it cannot verify, and --check shows why
    if (out / ".gpuplatform.lock").stat().st_size:
        assert _synth(new, out) == 2
    # AND `synth --recover` recovers from the folders alone, then writes the new tree
    recovered = _synth_recover(new, out)
    assert recovered.returncode == 0, recovered.stderr
    assert _complete_tree(out / "lab") == "claims"
    assert sorted(p.name for p in out.iterdir()) == [".gpuplatform.lock", "lab"]
    assert _check(new, out).returncode == 0


def test_recovery_from_the_folders_puts_the_old_tree_back_and_never_moves_a_live_one(tmp_path: Path) -> None:
    # GIVEN a run killed between its two renames (the old tree only at its backup name), its key gone
    old, new = _specs(tmp_path)
    out = tmp_path / "out"
    assert _synth(old, out) == 0
    assert _synth(new, out, crash_at="moved-old", exchange=False) == 86
    key_path().unlink()
    with exclusive_output(out) as state:
        # WHEN only the recovery runs, without the record
        warnings = recover(state, from_disk=True)
    # THEN the old tree is back at its place, and the new one, only staged, is gone
    assert _complete_tree(out / "lab") == "pilot"
    assert sorted(p.name for p in out.iterdir()) == [".gpuplatform.lock", "lab"]
    assert [w.message for w in warnings] == [
        w.message for w in warnings if w.message.startswith("restored from")
    ]
    # AND with a forged record that says `lab` was being created (the record once deleted a live tree)
    (out / ".gpuplatform.lock").write_text(
        json.dumps({"format": "gpuplatform.dev/output-state/v1", "phase": "swapping", "entries": []}) + "\n"
    )
    (out / ".gpuplatform-staging.0123456789abcdef.lab").mkdir()
    with exclusive_output(out) as state:
        recover(state, from_disk=True)
    # THEN the live tree stays, and only the writer's folder goes
    assert _complete_tree(out / "lab") == "pilot"
    assert sorted(p.name for p in out.iterdir()) == [".gpuplatform.lock", "lab"]


def test_a_library_synth_recovers_a_killed_run_though_its_key_is_its_process_s(tmp_path: Path) -> None:
    # GIVEN a run killed once it staged (its record sealed with a key this process does not hold)
    old, new = _specs(tmp_path)
    out = tmp_path / "out"
    assert _synth(old, out) == 0
    assert _synth(new, out, crash_at="staged") == 86
    [loaded] = load_stack(new)
    with using(Runtime()):  # a library call: this process's key
        # WHEN the platform is written from Python / THEN the record is refused, as from the CLI
        with pytest.raises(InputError, match="MAC"):
            loaded.platform.synth(out)
        # AND with recover=True the folders are recovered and the tree written
        report = loaded.platform.synth(out, recover=True)
    assert (report.exit_code, report.written) == (0, ["lab"])
    assert _complete_tree(out / "lab") == "claims"
    assert sorted(p.name for p in out.iterdir()) == [".gpuplatform.lock", "lab"]
