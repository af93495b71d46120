"""`init` and `inventory nodes` read GPUs, MIG devices and MIG configs from GFD's labels.

Labels as GPU Feature Discovery writes them (`evidence/gfd.py`, NVIDIA/k8s-device-plugin
`internal/lm/resource.go`): a full GPU `nvidia.com/gpu.count`/`.product`; mixed strategy
`nvidia.com/mig-<profile>.count`/`.product` (`<parent>-MIG-<profile>`) and no full-GPU labels when
every GPU is partitioned; single strategy `nvidia.com/gpu.count` counting MIG devices and a
`-MIG-<profile>` product. The MIG manager's `nvidia.com/mig.config` names the layout.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from gpuplatform.cli import main
from gpuplatform.evidence.gfd import read_node
from tests.specs import healthy_cluster


def _node(name: str, labels: dict[str, str], allocatable: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels},
        "status": {"allocatable": {"cpu": "64", **(allocatable or {})}},
    }


WHOLE = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": "8"}
MIXED = {
    "nvidia.com/mig.strategy": "mixed",
    "nvidia.com/mig.config": "all-1g.10gb",
    "nvidia.com/mig-1g.10gb.count": "56",
    "nvidia.com/mig-1g.10gb.product": "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb",
}
SINGLE = {
    "nvidia.com/mig.strategy": "single",
    "nvidia.com/mig.config": "all-3g.20gb",
    "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-3g.20gb",
    "nvidia.com/gpu.count": "16",
}


def _init(tmp_path: Path, nodes: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    cluster = healthy_cluster()
    cluster.kinds["nodes"] = nodes
    spec = tmp_path / "spec.yaml"
    result = CliRunner().invoke(
        main,
        ["init", "--snapshot", str(cluster.write(tmp_path / "snap")), "--name", "prod", "--out", str(spec)],
    )
    assert result.exit_code == 0, result.output
    text = spec.read_text()
    return text, yaml.safe_load(text)["spec"]["nodePools"]


def test_gpus_per_node_come_from_gfd_count_on_a_dra_node_without_allocatable_gpus(tmp_path: Path) -> None:
    text, pools = _init(tmp_path, [_node("h100-01", WHOLE)])
    assert pools == [
        {"name": "nvidia-h100-80gb-hbm3", "nodes": ["h100-01"], "product": "H100-80GB", "gpusPerNode": 8}
    ]
    assert "TODO: gpusPerNode" not in text


def test_mixed_strategy_mig_nodes_get_their_layout_and_a_todo(tmp_path: Path) -> None:
    text, pools = _init(
        tmp_path, [_node("h100-01", WHOLE), _node("h100-02", MIXED, {"nvidia.com/mig-1g.10gb": "56"})]
    )
    mig = next(p for p in pools if p["nodes"] == ["h100-02"])
    assert mig == {
        "name": "nvidia-h100-80gb-hbm3-mig",
        "nodes": ["h100-02"],
        "product": "H100-80GB",
        "gpusPerNode": 8,
        "migLayout": ["1g.10gb"] * 7,
    }
    assert "# TODO: gpusPerNode 8 is a guess: GFD counts MIG devices (56x1g.10gb)" in text
    assert "mig.config all-1g.10gb" in text
    args = ["synth", str(tmp_path / "spec.yaml"), "--out", str(tmp_path / "out")]
    synth = CliRunner().invoke(main, [*args, "--allow", "GP280", "--allow", "GP290"])  # placeholder waves
    assert synth.exit_code == 0, synth.stderr


def test_single_strategy_reads_the_profile_from_the_product_label(tmp_path: Path) -> None:
    text, pools = _init(tmp_path, [_node("a100-01", SINGLE, {"nvidia.com/gpu": "16"})])
    assert pools == [
        {
            "name": "nvidia-a100-sxm4-40gb-mig",
            "nodes": ["a100-01"],
            "product": "A100-40GB",
            "gpusPerNode": 8,
            "migLayout": ["3g.20gb", "3g.20gb"],
        }
    ]
    assert "TODO: migLayout is read from GFD's MIG device counts (16x3g.20gb)" in text


def test_allocatable_without_a_count_label_is_marked(tmp_path: Path) -> None:
    labels = {"nvidia.com/gpu.product": "NVIDIA-L4"}
    text, pools = _init(tmp_path, [_node("l4-01", labels, {"nvidia.com/gpu": "4"})])
    assert pools[0]["gpusPerNode"] == 4
    assert "# TODO: gpusPerNode is read from allocatable nvidia.com/gpu=4" in text


def test_read_node_keeps_shared_and_mig_suffixes_off_the_product() -> None:
    shared = read_node({"nvidia.com/gpu.product": "NVIDIA-L4-SHARED", "nvidia.com/gpu.count": "2"}, {})
    assert (shared.product, shared.gpus, shared.guessed) == ("NVIDIA-L4", 2, ())
    single = read_node(SINGLE, {})
    assert (single.product, single.gpus, single.mig_devices) == (
        "NVIDIA-A100-SXM4-40GB",
        None,
        (("3g.20gb", 16),),
    )


def test_inventory_nodes_shows_mig(tmp_path: Path) -> None:
    cluster = healthy_cluster()
    cluster.kinds["nodes"] = [_node("h100-01", WHOLE, {"nvidia.com/gpu": "8"}), _node("h100-02", MIXED)]
    result = CliRunner().invoke(
        main, ["inventory", "nodes", str(cluster.write(tmp_path / "snap")), "--format", "yaml"]
    )
    assert result.exit_code == 0, result.output
    rows = {r["node"]: r for r in yaml.safe_load(result.stdout)}
    assert rows["h100-02"]["migConfig"] == "all-1g.10gb"
    assert rows["h100-02"]["migStrategy"] == "mixed"
    assert rows["h100-02"]["migDevices"] == "56x1g.10gb"
    assert rows["h100-01"]["migDevices"] == ""
