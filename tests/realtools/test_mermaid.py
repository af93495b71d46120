"""Mermaid's own parser reads every platform's diagram, and the largest a spec may ask for.

The parser is mermaid from npm with jsdom (`.ci/setup-tools` installs the pinned versions into
`.tools/mermaid`); without it, or without Node.js, the test skips and says why.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gpuplatform.load.stacks import discover_stacks, load_stack
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.overview_mermaid import overview_mermaid
from tests.conftest import REPO
from tests.render.test_overview_mermaid import wide_plan

PREFIX = REPO / ".tools" / "mermaid"
SCRIPT = Path(__file__).with_name("mermaid_parse.mjs")


def test_mermaid_parses_every_diagram(tmp_path: Path) -> None:
    node = shutil.which("node")
    if node is None or not (PREFIX / "node_modules" / "mermaid").is_dir():
        pytest.skip("needs Node.js and mermaid in .tools/mermaid (.ci/setup-tools installs it)")
    # GIVEN every platform's diagram and the widest one a spec may ask for (32 waves)
    plans = [
        plan_platform(lp.platform) for stack in discover_stacks(REPO / "stacks") for lp in load_stack(stack)
    ]
    plans.append(wide_plan(pools=64, waves=32))
    files = []
    for i, plan in enumerate(plans):
        files.append(tmp_path / f"{i:02d}-{plan.platform.name}.mmd")
        files[-1].write_text(overview_mermaid(plan))
    # WHEN mermaid parses them (its parser also refuses a graph over its 500-link limit)
    done = subprocess.run(
        [node, str(SCRIPT), str(PREFIX), *map(str, files)], capture_output=True, text=True, check=False
    )
    # THEN each is a flowchart
    assert done.returncode == 0, done.stderr
    assert done.stdout.count(": flowchart-v2") == len(files)
