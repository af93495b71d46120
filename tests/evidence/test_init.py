"""`gpuplatform init`: a starting spec from a snapshot that synth accepts unchanged."""

from __future__ import annotations

from pathlib import Path

import yaml
from click.testing import CliRunner

from gpuplatform.cli import main
from tests.evidence.builders import Cluster


def test_init_round_trips_through_synth(tmp_path: Path) -> None:
    folder = Cluster.healthy().write(tmp_path / "snap")
    spec = tmp_path / "cluster.yaml"
    runner = CliRunner()
    result = runner.invoke(main, ["init", "--snapshot", str(folder), "--name", "prod", "--out", str(spec)])
    assert result.exit_code == 0, result.output
    text = spec.read_text()
    assert "# TODO: decide the service tiers" in text
    doc = yaml.safe_load(text)
    pools = doc["spec"]["nodePools"]
    assert pools == [
        {
            "name": "nvidia-h100-80gb-hbm3",
            "nodes": ["gpu-dra-01", "gpu-legacy-01"],
            "product": "H100-80GB",
            "gpusPerNode": 8,
        }
    ]
    assert all("migratesIn" not in p for p in pools)
    assert {
        "kind": "Deployment",
        "namespace": "ml",
        "name": "trainer",
        "gpus": 2,
        "replicas": 1,
        "tier": "full-gpu",
        "movesIn": "application",
    } in doc["spec"]["workloads"]
    assert "ml" in doc["spec"]["tenantPolicy"]["allowNamespaces"]
    synth = runner.invoke(main, ["synth", str(spec), "--out", str(tmp_path / "out")])
    assert synth.exit_code == 0, synth.output
    assert (tmp_path / "out" / "prod" / "gpuplatform.lock.json").is_file()


def test_init_without_gpu_nodes_is_bad_input(tmp_path: Path) -> None:
    cluster = Cluster.healthy()
    cluster.kinds["nodes"] = [
        {"metadata": {"name": "cpu-1", "labels": {}}, "status": {"allocatable": {"cpu": "8"}}}
    ]
    result = CliRunner().invoke(main, ["init", "--snapshot", str(cluster.write(tmp_path / "snap"))])
    assert result.exit_code == 2
    assert "no GPU node found" in result.stderr
