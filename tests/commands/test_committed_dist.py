"""The committed `dist/` is what the bundled stacks render, every file of every platform: what the
syrupy goldens of each wave, delivery folder, runbook and overview once repeated, `synth --check`
(run by `.ci/run` too) now guards alone."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from gpuplatform.cli import main
from gpuplatform.load.stacks import discover_stacks, load_stack
from tests.conftest import REPO


def test_synth_check_finds_dist_current_for_every_bundled_stack(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN every platform of every stack in stacks/, and the folders committed in dist/
    platforms = sorted(lp.platform.name for s in discover_stacks(REPO / "stacks") for lp in load_stack(s))
    committed = sorted(p.name for p in (REPO / "dist").iterdir() if p.is_dir() and not p.name.startswith("."))
    # WHEN `gpuplatform synth --check` runs in the repository, as CI runs it
    monkeypatch.chdir(REPO)
    result = CliRunner().invoke(main, ["synth", "--check"])
    # THEN it checked them all and found nothing stale (else: run `gpuplatform synth` and review dist/)
    assert result.exit_code == 0, result.stderr
    assert committed == platforms
    assert result.stdout.strip() == f"dist: up to date ({len(platforms)} platform(s))"
