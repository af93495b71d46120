"""The production cluster of issue 25 and its staging overlay: every command agrees, on 1.35 and 1.36."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from gpuplatform.cli import main

HERE = Path(__file__).parent


def _spec(tmp_path: Path, version: str) -> list[str]:
    doc = yaml.safe_load((HERE / "gke-production.yaml").read_text())
    doc["spec"]["kubernetes"]["version"] = version
    spec = tmp_path / "gke-production.yaml"
    spec.write_text(yaml.safe_dump(doc, sort_keys=False))
    overlay = tmp_path / "gke-staging.yaml"
    overlay.write_text((HERE / "gke-staging.yaml").read_text())
    return [str(spec)]


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


@pytest.mark.parametrize("version", ["1.35.2", "1.36.1"])
@pytest.mark.parametrize("overlay", [(), ("--overlay", "gke-staging.yaml")])
def test_the_gke_production_cluster_passes_every_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str, overlay: tuple[str, ...]
) -> None:
    monkeypatch.chdir(tmp_path)
    (spec,) = _spec(tmp_path, version)
    code, out = _run("check", spec, *overlay)
    assert code == 0, out
    assert not [line for line in out.splitlines() if line.startswith(("warning:", "error:"))], out
    code, out = _run("simulate", spec, *overlay, "--all")
    assert code == 0, out
    # 72 until rollbacks that take workloads back began with the owners' rolling update (#38 item 8):
    # their runbooks now start with a manual step, so each is replayed with the operator late too
    assert "76 of 76 transition replays proven" in out
    # every wave fits: the MIG CronJob runs on the zone-b MIG nodes while zone a moves, and on
    # zone a's DRA slices once it asks for claims, before zone b moves
    code, out = _run("capacity", spec, *overlay, "--all")
    assert code == 0 and "does not fit" not in out, out
    code, out = _run("synth", spec, *overlay, "--out", str(tmp_path / "dist"))
    assert code == 0, out
    handoffs = {p.name for p in (tmp_path / "dist").rglob("nodepoolhandoff_*.yaml")}
    assert {"nodepoolhandoff_a100-mig-a.yaml", "nodepoolhandoff_a100-mig-b.yaml"} <= handoffs
    runbooks = "\n".join(p.read_text() for p in (tmp_path / "dist").rglob("runbooks/*.md"))
    # part of the A100 node group moves: its nodes are labelled by selector, never the group's template
    assert "gcloud container node-pools update a100 " not in runbooks
    assert (
        "kubectl label nodes -l cloud.google.com/gke-nodepool=a100,nvidia.com/mig.config=all-1g.10gb,"
        in runbooks
    )
    # the H100 pilot is one node of a new DRA group next to the old one: created from the old
    # group's live configuration before the merge, then the old group shrinks by that node
    (pilot_path,) = (tmp_path / "dist").rglob("runbooks/01-pilot.md")
    pilot = pilot_path.read_text()
    create = pilot.index("gcloud container node-pools create h100-dra ")
    shrink = pilot.index(
        'gcloud container clusters resize "$CLUSTER" --project="$PROJECT" --location="$LOCATION" --node-pool h100 '
    )
    assert create < shrink < pilot.index("### Sync")
    assert "gcloud container node-pools delete h100-dra " in pilot.split("## Rollback to 00-base")[1]
