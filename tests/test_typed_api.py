"""The public API is typed for users: `mypy --strict` on a user's script sees every export's real
type, so a misspelt name fails and correct use passes (issue 37, item 4).

mypy runs as a user's project would: its own (empty) configuration, not this repository's
(whose pydantic plugin types every model argument `Any`), on the installed package (`py.typed`).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import gpuplatform
from tests.conftest import REPO

SCRIPTS = Path(__file__).parent / "typed_api"


@pytest.fixture(scope="module")
def mypy_lines(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """mypy --strict's findings on every script of tests/typed_api/, in one run (~20 s)."""
    work = tmp_path_factory.mktemp("mypy")
    config = work / "mypy.ini"
    config.write_text("[mypy]\n")
    scripts = sorted(str(p) for p in SCRIPTS.glob("*.py") if p.name != "__init__.py")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--config-file",
            str(config),
            "--cache-dir",
            str(work / "cache"),
            "--no-incremental",
            *scripts,
        ],
        capture_output=True,
        text=True,
        cwd=work,
        check=False,
    )
    return run.stdout.splitlines()


def _errors_in(lines: list[str], script: str) -> list[str]:
    return [line for line in lines if re.match(rf".*{re.escape(script)}:\d+: error:", line)]


def test_the_package_ships_its_types() -> None:
    assert (Path(gpuplatform.__file__).parent / "py.typed").is_file()
    assert "py.typed" in (REPO / "pyproject.toml").read_text()


def test_a_misspelt_export_fails_mypy(mypy_lines: list[str]) -> None:
    assert _errors_in(mypy_lines, "typo.py") == [
        f'{SCRIPTS / "typo.py"}:5: error: Module has no attribute "plan_platfrom"; maybe "plan_platform"?  [attr-defined]'
    ], mypy_lines


def test_every_export_used_correctly_passes_mypy(mypy_lines: list[str]) -> None:
    assert _errors_in(mypy_lines, "every_export.py") == [], mypy_lines


def test_the_script_builds_a_valid_platform() -> None:
    run = subprocess.run(
        [sys.executable, str(SCRIPTS / "every_export.py")], capture_output=True, text=True, check=False
    )
    assert (run.returncode, run.stderr) == (0, "")


def test_the_script_uses_every_export() -> None:
    text = (SCRIPTS / "every_export.py").read_text()
    unused = [name for name in gpuplatform.__all__ if f"gp.{name}" not in text]
    assert unused == []


def test_the_reference_stack_written_with_objects_passes_mypy(mypy_lines: list[str]) -> None:
    assert _errors_in(mypy_lines, "reference_stack.py") == [], mypy_lines


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_the_reference_stack_written_with_objects_synthesizes_the_committed_tree(tmp_path: Path) -> None:
    # GIVEN the user's script, run as a program from an empty folder
    # WHEN it calls platform.synth(out)
    run = subprocess.run(
        [sys.executable, str(SCRIPTS / "reference_stack.py"), "out"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    # THEN it wrote dist/reference/ as committed: the same spec (its digest) and the same files, but
    # for the stack's name in the lock file and the ApplicationSets, which the committed tree shares
    # with the staging platform of the overlay
    assert (run.returncode, run.stdout, run.stderr) == (0, "wrote out/reference\n", "")
    shared = "delivery/argocd-applicationset/"
    committed = {p: b for p, b in _files(REPO / "dist" / "reference").items() if not p.startswith(shared)}
    written = _files(tmp_path / "out" / "reference")
    lock, committed_lock = (json.loads(f.pop("gpuplatform.lock.json")) for f in (written, committed))
    assert written == committed
    assert lock["specDigest"] == committed_lock["specDigest"]
    assert lock["stack"] == "<python>"
    assert lock["files"] == {p: d for p, d in committed_lock["files"].items() if not p.startswith(shared)}


def test_a_users_tests_with_the_testing_helpers_pass_mypy(mypy_lines: list[str]) -> None:
    assert _errors_in(mypy_lines, "testing_helpers.py") == [], mypy_lines


def test_the_users_tests_use_every_testing_helper_and_pass(tmp_path: Path) -> None:
    from gpuplatform import testing
    from tests.typed_api import testing_helpers

    text = (SCRIPTS / "testing_helpers.py").read_text()
    assert [name for name in testing.__all__ if f"testing.{name}" not in text] == []
    (tmp_path / "a").mkdir()
    testing_helpers.test_the_tree_is_valid_and_parses(tmp_path / "a")
    testing_helpers.test_the_gates_judge_a_broken_cluster(tmp_path)
