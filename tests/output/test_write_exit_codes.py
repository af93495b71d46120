"""The writer's late interrupts and the machine's refusals: a committed run finishes; 74, not 2."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gpuplatform.cli import main
from gpuplatform.output.write import STATE_FILE
from tests.conftest import REPO, sigint_default
from tests.specs import minimal_spec, write_spec

#: Runs the CLI with a SIGINT sent to itself at the writer's crash point argv[1].
_RUNNER = """
import os, signal, sys
import gpuplatform.output.write as write
point = sys.argv.pop(1)
def hook(name):
    if name == point:
        os.kill(os.getpid(), signal.SIGINT)
write.crash_hook = hook
if point == "cleanup":
    remove = write._remove
    def interrupted(path, warnings):
        os.kill(os.getpid(), signal.SIGINT)
        return remove(path, warnings)
    write._remove = interrupted
from gpuplatform.cli import main
main()
"""


def _specs(tmp_path: Path) -> tuple[Path, Path]:
    old, new = minimal_spec(), minimal_spec()
    new["spec"]["activeWave"] = "claims"
    return write_spec(tmp_path / "old.yaml", old), write_spec(tmp_path / "new.yaml", new)


def _active_wave(out: Path) -> str:
    lock = (out / "lab" / "gpuplatform.lock.json").read_text()
    return "claims" if '"activeWave": "claims"' in lock else "pilot"


@pytest.mark.parametrize("point", ["swapped", "committed", "cleanup"])
def test_sigint_once_the_swap_began_finishes_the_run(tmp_path: Path, point: str) -> None:
    # GIVEN a tree of the old spec
    old, new = _specs(tmp_path)
    out = tmp_path / "out"
    assert CliRunner().invoke(main, ["synth", str(old), "--out", str(out)]).exit_code == 0
    # WHEN a synth of the new spec gets SIGINT after the swap began (or while it removes the old tree)
    done = subprocess.run(
        [sys.executable, "-c", _RUNNER, point, "synth", str(new), "--out", str(out)],
        capture_output=True,
        cwd=REPO,
        timeout=120,
        preexec_fn=sigint_default,
        check=False,
    )
    # THEN it completes: the new tree in place, no staging or backup folder, success with a warning
    assert done.returncode == 0, done.stderr
    assert _active_wave(out) == "claims"
    assert sorted(p.name for p in out.iterdir()) == [STATE_FILE, "lab"]
    assert (out / STATE_FILE).read_bytes() == b""
    assert b"warning: " + str(out).encode() + b": interrupted (SIGINT) while the new trees" in done.stderr


def test_sigint_while_staging_still_undoes_the_run(tmp_path: Path) -> None:
    old, new = _specs(tmp_path)
    out = tmp_path / "out"
    assert CliRunner().invoke(main, ["synth", str(old), "--out", str(out)]).exit_code == 0
    done = subprocess.run(
        [sys.executable, "-c", _RUNNER, "staged", "synth", str(new), "--out", str(out)],
        capture_output=True,
        cwd=REPO,
        timeout=120,
        preexec_fn=sigint_default,
        check=False,
    )
    assert done.returncode == 130
    assert _active_wave(out) == "pilot"
    assert sorted(p.name for p in out.iterdir()) == [STATE_FILE, "lab"]


def test_the_previous_sigint_handler_is_back_after_a_run(tmp_path: Path) -> None:
    before = signal.getsignal(signal.SIGINT)
    spec = write_spec(tmp_path / "lab.yaml", minimal_spec())
    assert CliRunner().invoke(main, ["synth", str(spec), "--out", str(tmp_path / "out")]).exit_code == 0
    assert signal.getsignal(signal.SIGINT) is before


@pytest.mark.parametrize(
    ("code", "text"), [(errno.EACCES, "Permission denied"), (errno.EROFS, "Read-only file system")]
)
@pytest.mark.parametrize("where", ["out-folder", "state-file"])
def test_an_output_folder_the_machine_refuses_exits_74(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int, text: str, where: str
) -> None:
    # GIVEN an --out the machine will not let us create (or create files in)
    spec, out = write_spec(tmp_path / "lab.yaml", minimal_spec()), tmp_path / "out"
    if where == "state-file":
        out.mkdir()
    real_mkdir, real_open = os.mkdir, os.open

    def mkdir(path: Any, *args: Any, **kwargs: Any) -> None:
        if Path(path) == out:
            raise OSError(code, text, str(path))
        real_mkdir(path, *args, **kwargs)

    def open_(path: Any, *args: Any, **kwargs: Any) -> int:
        if Path(path) == out / STATE_FILE:
            raise OSError(code, text, str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", mkdir)
    monkeypatch.setattr(os, "open", open_)
    # WHEN synth writes there / THEN exit 74 (the machine refused), naming the path and the cause
    result = CliRunner().invoke(main, ["synth", str(spec), "--out", str(out)])
    assert result.exit_code == 74, result.output
    failed = out if where == "out-folder" else out / STATE_FILE
    assert result.stderr == f"error: {failed}: cannot write the output: {text}\n"


def test_an_output_path_that_is_a_file_is_still_bad_input(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "lab.yaml", minimal_spec())
    (tmp_path / "file").write_text("x")
    result = CliRunner().invoke(main, ["synth", str(spec), "--out", str(tmp_path / "file" / "out")])
    assert result.exit_code == 2
    assert "cannot be used as the output folder: Not a directory" in result.stderr
