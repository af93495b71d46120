"""`diff --waves` serializes only the two wave folders it compares, byte for byte as synth writes them."""

from __future__ import annotations

from gpuplatform.load.stacks import load_stack
from gpuplatform.output.synth import render_files, render_wave_files
from gpuplatform.plan.waves import plan_platform
from tests.conftest import REPO


def test_wave_files_are_the_synth_files_of_those_waves() -> None:
    for stack in ("reference.py", "nim-lab.yaml"):
        loaded = load_stack(REPO / "stacks" / stack)[0]
        waves = plan_platform(loaded.platform).waves
        folders = [waves[0].dir_name, waves[-1].dir_name]
        everything = render_files(loaded)
        expected = {
            p: b for p, b in everything.items() if p.startswith(tuple(f"waves/{f}/" for f in folders))
        }
        assert render_wave_files(loaded, folders) == expected
        assert expected and len(expected) < len(everything)
