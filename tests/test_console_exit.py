"""The console script ends with `os._exit` after flushing: what it prints and its exit code are
exactly the command's, as the in-process runner sees them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuplatform.cli import main
from tests.conftest import REPO
from tests.specs import minimal_spec, write_spec

_CLI = [sys.executable, "-m", "gpuplatform.cli"]
_PROG = "python -m gpuplatform.cli"


def _cases(tmp_path: Path) -> list[list[str]]:
    bad = minimal_spec()
    bad["spec"]["waves"] = "not a list"
    return [
        ["plan", str(REPO / "stacks" / "reference.py")],  # exit 0
        ["check", str(write_spec(tmp_path / "bad.yaml", bad))],  # exit 2, on stderr
        ["plan", str(REPO / "stacks" / "reference.py"), "--from", "no-such-wave"],  # exit 2
        ["--version"],
    ]


@pytest.mark.parametrize("case", range(4))
def test_console_script_prints_and_exits_as_the_command_does(tmp_path: Path, case: int) -> None:
    args = _cases(tmp_path)[case]
    expected = CliRunner().invoke(main, args, prog_name=_PROG)
    done = subprocess.run([*_CLI, *args], capture_output=True, cwd=REPO, timeout=120, check=False)
    assert done.returncode == expected.exit_code
    assert done.stdout.decode() == expected.stdout
    assert done.stderr.decode() == expected.stderr


def test_console_script_output_is_whole_through_a_pipe_to_a_slow_reader(tmp_path: Path) -> None:
    # a reader that takes its time: the flush before `os._exit` must still deliver every byte
    args = ["schema"]
    expected = CliRunner().invoke(main, args, prog_name=_PROG).stdout.encode()
    reader = subprocess.run(
        ["sh", "-c", f"{' '.join(_CLI)} {' '.join(args)} | (sleep 1; cat)"],
        capture_output=True,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert len(expected) > 65536  # more than a pipe holds
    assert reader.stdout == expected


_PRINTERS = [["schema"], ["--help"], ["--version"], ["synth", "--help"]]
_CUT = b"error: stdout: the reader closed the pipe before the output was complete\n"


@pytest.mark.parametrize("args", _PRINTERS, ids=" ".join)
def test_printing_to_a_closed_stdout_is_never_a_success(args: list[str]) -> None:
    done = subprocess.run(
        [*_CLI, *args], stderr=subprocess.PIPE, cwd=REPO, timeout=120, preexec_fn=lambda: os.close(1)
    )
    assert (done.returncode, done.stderr) == (74, b"error: stdout: cannot print the result: it is closed\n")


@pytest.mark.parametrize("args", _PRINTERS, ids=" ".join)
def test_printing_to_a_reader_that_went_away_is_never_a_success(args: list[str]) -> None:
    proc = subprocess.Popen([*_CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    assert proc.wait(timeout=120) == 74
    assert proc.stderr.read() == _CUT


def test_output_cut_by_head_is_never_a_success(tmp_path: Path) -> None:
    # the schema is more than a pipe holds: `head -c1` leaves the rest unwritten
    err = tmp_path / "stderr"
    script = f'{" ".join(_CLI)} schema 2>"{err}" | head -c1 >/dev/null; exit "${{PIPESTATUS[0]}}"'
    done = subprocess.run(["bash", "-c", script], cwd=REPO, timeout=120, check=False)
    assert (done.returncode, err.read_bytes()) == (74, _CUT)


@pytest.mark.parametrize("args", _PRINTERS, ids=" ".join)
def test_printing_to_a_full_device_is_never_a_success(args: list[str]) -> None:
    with open("/dev/full", "wb") as full:
        done = subprocess.run([*_CLI, *args], stdout=full, stderr=subprocess.PIPE, cwd=REPO, timeout=120)
    assert done.returncode == 74
    assert done.stderr.startswith(b"error: ") and b"No space left on device" in done.stderr
