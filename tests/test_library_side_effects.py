"""The library has no side effects the caller did not ask for (issue 37, item 6): a library call
forks no child, keeps no cache and creates no state key; the CLI does all three."""

from __future__ import annotations

import os
import runpy
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuplatform.cli import main
from gpuplatform.commands.synth import synth_tree
from gpuplatform.load.stacks import load_stack
from gpuplatform.runtime import CACHE_ENV
from tests.conftest import REPO
from tests.forks import count_forks


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty home: HOME and every XDG base directory point into it, no cache variable."""
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    for name in ("XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"):
        monkeypatch.setenv(name, str(folder / name.lower()))
    monkeypatch.delenv(CACHE_ENV, raising=False)
    yield folder


def _entries(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


def test_a_library_synth_writes_its_output_and_nothing_else(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the reference stack, loaded
    loaded = load_stack(REPO / "stacks" / "reference.py")
    forked = count_forks(monkeypatch)
    # WHEN the library writes it
    synth_tree(loaded, tmp_path / "out")
    # THEN no child was forked, the home is empty, and the output folder holds the trees only
    assert forked == []
    assert _entries(home) == []
    assert sorted(os.listdir(tmp_path / "out")) == [".gpuplatform.lock", "reference", "reference-staging"]


def test_the_cli_keeps_its_cache_and_key_in_the_home(tmp_path: Path, home: Path) -> None:
    result = CliRunner().invoke(
        main, ["synth", str(REPO / "stacks" / "reference.py"), "--out", str(tmp_path / "out")]
    )
    assert result.exit_code == 0, result.stderr
    found = _entries(home)
    assert "xdg_state_home/gpuplatform/state-key" in found
    assert any(p.startswith("xdg_cache_home/gpuplatform/verdicts/") for p in found)


def test_platform_synth_in_a_notebook_writes_out_and_nothing_else(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the reference platform written by a user with object references, in a notebook's folder
    work = tmp_path / "notebook"
    work.mkdir()
    monkeypatch.chdir(work)
    platform = runpy.run_path(str(REPO / "tests" / "typed_api" / "reference_stack.py"))["platform"]
    forked = count_forks(monkeypatch)
    # WHEN it is checked, simulated and written
    checked = platform.check()
    simulated = platform.simulate(from_wave="baseline", to_wave="pilot-pool")
    report = platform.synth("out")
    # THEN no child was forked, nothing appeared in the home, and only `out` in the folder
    assert (checked.exit_code, simulated.exit_code, report.written) == (0, 0, ["reference"])
    assert forked == []
    assert _entries(home) == []
    assert os.listdir(work) == ["out"]
    assert sorted(os.listdir(work / "out")) == [".gpuplatform.lock", "reference"]
