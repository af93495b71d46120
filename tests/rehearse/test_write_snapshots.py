"""`rehearse --write-snapshots`: the product's own `gpuplatform snapshot` reads the rehearsal's real
API state once each transition settles, and `evidence` judges what it wrote."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from click.testing import CliRunner

from gpuplatform.cli import main
from gpuplatform.load.stacks import load_stack
from gpuplatform.rehearse.assets import Assets
from tests.conftest import REPO
from tests.rehearse.conftest import FOUR_NODES, rehearse_tree

GPUPLATFORM = str(REPO / ".venv" / "bin" / "gpuplatform")


def test_each_settled_transition_is_a_snapshot_evidence_reads(
    four_nodes: Path, assets_136: Assets, crds: Path | None, tmp_path: Path
) -> None:
    # GIVEN the four-node lab rehearsed from `second` back to `pilot`, writing snapshots
    out = tmp_path / "snapshots"
    report = rehearse_tree(FOUR_NODES, four_nodes, "second", "pilot", assets_136, crds, snapshots=out)
    assert [(r.source, r.target, r.violation) for r in report.results] == [("second", "pilot", None)]
    # THEN one snapshot once the first wave was adopted and one once each transition settled (those
    # that lead to `second` too), written by `gpuplatform snapshot` with every kind read
    names = sorted(p.name for p in out.iterdir())
    assert names == [
        "four-node-pilot-flux-01-adopt-baseline",
        "four-node-pilot-flux-02-baseline-to-pilot",
        "four-node-pilot-flux-03-pilot-to-second",
        "four-node-pilot-flux-04-second-to-pilot",
    ]
    settled = out / names[-1]
    manifest = json.loads((settled / "manifest.json").read_text())
    assert "unreachable" not in manifest
    assert [
        k for k in ("nodes", "pods", "resourceslices", "resourceclaims") if k in manifest["missing"]
    ] == []
    nodes = {n["metadata"]["name"] for n in json.loads((settled / "nodes.json").read_text())["items"]}
    [loaded] = load_stack(FOUR_NODES)
    assert {n for pool in loaded.platform.node_pools for n in pool.nodes} <= nodes
    # AND `evidence` on the settled cluster finds every gate of `pilot` held, as the rehearsal did
    result = subprocess.run(
        [GPUPLATFORM, "evidence", str(FOUR_NODES), "--wave", "pilot", "--snapshot", str(settled)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_write_snapshots_needs_a_new_or_empty_folder(tmp_path: Path) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    result = CliRunner().invoke(
        main, ["rehearse", str(FOUR_NODES), "--write-snapshots", str(tmp_path / "full")]
    )
    assert result.exit_code == 2 and "new or empty folder" in result.output
