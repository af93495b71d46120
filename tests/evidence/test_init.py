"""`gpuplatform init`: a starting spec from a snapshot that synth accepts unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from gpuplatform.cli import main
from gpuplatform.testing import node
from tests.specs import healthy_cluster

#: The placeholder waves convert the workloads before any pool is on DRA (GP280, GP290): allowed here.
_PLACEHOLDER_WAVES = ("--allow", "GP280", "--allow", "GP290")


def test_init_round_trips_through_synth(tmp_path: Path) -> None:
    folder = healthy_cluster().write(tmp_path / "snap")
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
    # THEN the placeholder waves convert the workloads before any pool is on DRA: refused until decided
    refused = runner.invoke(main, ["synth", str(spec), "--out", str(tmp_path / "out")])
    assert refused.exit_code == 1
    assert (
        "spec.waves[1]: GP280 wave 'application' does not fit at application: workload ml/trainer"
        in refused.stderr
    )
    assert "check refuses it, GP280" in text
    synth = runner.invoke(main, ["synth", str(spec), "--out", str(tmp_path / "out"), *_PLACEHOLDER_WAVES])
    assert synth.exit_code == 0, synth.output
    assert (tmp_path / "out" / "prod" / "gpuplatform.lock.json").is_file()


def test_init_without_gpu_nodes_is_bad_input(tmp_path: Path) -> None:
    cluster = healthy_cluster()
    cluster.kinds["nodes"] = [
        {"metadata": {"name": "cpu-1", "labels": {}}, "status": {"allocatable": {"cpu": "8"}}}
    ]
    result = CliRunner().invoke(main, ["init", "--snapshot", str(cluster.write(tmp_path / "snap"))])
    assert result.exit_code == 2
    assert "no GPU node found" in result.stderr


_TYPE = "node.kubernetes.io/instance-type"


def _mixed_fleet(tmp_path: Path) -> Path:
    """Static A100 and H100 nodes, a Karpenter L40S NodePool and an EKS L4 node group, as GFD labels them."""
    cluster = healthy_cluster()
    cluster.kinds["nodes"] = [
        node("a100-01", gpus="8", product="NVIDIA-A100-SXM4-40GB"),
        node("a100-02", gpus="8", product="NVIDIA-A100-SXM4-40GB"),
        node("h100-01", gpus="8", product="NVIDIA-H100-80GB-HBM3"),
        node(
            "ip-10-0-1-7",
            gpus="4",
            product="NVIDIA-L40S",
            labels={"karpenter.sh/nodepool": "gpu-l40s", _TYPE: "g6e.12xlarge"},
        ),
        node(
            "ip-10-0-2-9",
            gpus="4",
            product="NVIDIA-L40S",
            labels={"karpenter.sh/nodepool": "gpu-l40s", _TYPE: "g6e.24xlarge"},
        ),
        node(
            "ip-10-0-3-3",
            gpus="1",
            product="NVIDIA-L4",
            labels={"eks.amazonaws.com/nodegroup": "gpu-l4", _TYPE: "g6.xlarge"},
        ),
        {"metadata": {"name": "cpu-1", "labels": {}}, "status": {"allocatable": {"cpu": "8"}}},
    ]
    for n in cluster.kinds["nodes"]:
        count = n["status"]["allocatable"].get("nvidia.com/gpu")
        if count:
            n["metadata"]["labels"]["nvidia.com/gpu.count"] = count
    return cluster.write(tmp_path / "snap")


def test_init_groups_provisioner_nodes_and_maps_gfd_products_and_check_accepts_it(tmp_path: Path) -> None:
    # GIVEN a mixed fleet
    spec = tmp_path / "fleet.yaml"
    runner = CliRunner()
    # WHEN init writes a spec from it
    result = runner.invoke(
        main, ["init", "--snapshot", str(_mixed_fleet(tmp_path)), "--name", "fleet", "--out", str(spec)]
    )
    assert result.exit_code == 0, result.output
    text = spec.read_text()
    pools = yaml.safe_load(text)["spec"]["nodePools"]
    # THEN static nodes are grouped by product, provisioner nodes by their provisioner (never by
    # their ephemeral names), and GFD product labels are catalog keys
    assert pools == [
        {
            "name": "gpu-l40s",
            "provisioner": {"kind": "karpenter", "name": "gpu-l40s"},
            "product": "L40S",
            "gpusPerNode": 4,
        },
        {
            "name": "gpu-l4",
            "provisioner": {"kind": "node-group", "name": "gpu-l4", "cloud": "eks"},
            "product": "L4",
            "gpusPerNode": 1,
            "instanceType": "g6.xlarge",  # what a workload's instance-type nodeSelector is placed by
        },
        {
            "name": "nvidia-a100-sxm4-40gb",
            "nodes": ["a100-01", "a100-02"],
            "product": "A100-40GB",
            "gpusPerNode": 8,
        },
        {"name": "nvidia-h100-80gb-hbm3", "nodes": ["h100-01"], "product": "H100-80GB", "gpusPerNode": 8},
    ]
    assert (
        "  # Karpenter NodePool gpu-l40s: its nodes (ip-10-0-1-7, ip-10-0-2-9 today) are found by label"
        in text
    )
    assert "  # EKS node group gpu-l4: its nodes (ip-10-0-3-3 today)" in text
    assert "  # TODO: the nodes are of instance types g6e.12xlarge, g6e.24xlarge; a pool has one" in text
    # AND check and synth accept it unchanged but for its placeholder waves
    checked = runner.invoke(main, ["check", str(spec), *_PLACEHOLDER_WAVES])
    assert checked.exit_code == 0, checked.stderr
    assert "error" not in checked.stderr.replace("0 error(s)", "")
    synth = runner.invoke(main, ["synth", str(spec), "--out", str(tmp_path / "out"), *_PLACEHOLDER_WAVES])
    assert synth.exit_code == 0, synth.stderr


def test_gfd_product_labels_map_to_the_catalog() -> None:
    from gpuplatform.inventory.catalog import product_for_label

    assert product_for_label("NVIDIA-A100-SXM4-40GB").key == "A100-40GB"  # type: ignore[union-attr]
    assert product_for_label("NVIDIA-H100-80GB-HBM3-SHARED").key == "H100-80GB"  # type: ignore[union-attr]
    assert product_for_label("NVIDIA-A100-SXM4-80GB-MIG-1g.10gb").key == "A100-80GB"  # type: ignore[union-attr]
    assert product_for_label("NVIDIA-A100-80GB-PCIe").key == "A100-80GB-PCIE"  # type: ignore[union-attr]
    assert product_for_label("Tesla-T4") is None


def test_an_unknown_product_is_kept_with_a_todo(tmp_path: Path) -> None:
    cluster = healthy_cluster()
    cluster.kinds["nodes"] = [node("t4-01", gpus="1", product="Tesla-T4")]
    result = CliRunner().invoke(main, ["init", "--snapshot", str(cluster.write(tmp_path / "snap"))])
    assert result.exit_code == 0, result.output
    assert "  # TODO: Tesla-T4 is not in the GPU catalog" in result.stdout
    assert "product: Tesla-T4" in result.stdout


def test_values_read_from_the_snapshot_cannot_break_out_of_a_comment(tmp_path: Path) -> None:
    # GIVEN a product label and a snapshot folder whose names hold line breaks (issue 39, low)
    cluster = healthy_cluster()
    cluster.kinds["nodes"] = [node("t4-01", gpus="1", product="Tesla-T4\nactiveWave: evil")]
    folder = cluster.write(tmp_path / "snap\rspec: {}")
    # WHEN init writes them into its comments
    result = CliRunner().invoke(main, ["init", "--snapshot", str(folder)])
    # THEN each stays on its comment line, escaped; no line of YAML comes from them
    assert "  # TODO: Tesla-T4\\nactiveWave: evil is not in the GPU catalog" in result.stdout
    assert "snap\\rspec: {}" in result.stdout.splitlines()[0]
    doc = yaml.safe_load(result.stdout)
    assert set(doc) == {"apiVersion", "kind", "metadata", "spec"} and doc["spec"]["nodePools"]


def test_init_on_plain_kubectl_files_reads_the_kubelets_version_and_says_so(tmp_path: Path) -> None:
    # GIVEN `kubectl get -o json` files of a 1.35 cluster: no manifest, so no server version
    folder = healthy_cluster().write(tmp_path / "snap")
    (folder / "manifest.json").unlink()
    nodes = json.loads((folder / "nodes.json").read_text())
    for n, version in zip(nodes["items"], ("v1.35.2", "v1.35.4"), strict=True):
        n["status"]["nodeInfo"] = {"kubeletVersion": version}
    (folder / "nodes.json").write_text(json.dumps(nodes))
    spec = tmp_path / "cluster.yaml"
    # WHEN init writes the starting spec
    result = CliRunner().invoke(main, ["init", "--snapshot", str(folder), "--out", str(spec)])
    assert result.exit_code == 0, result.output
    # THEN its release is the nodes' newest kubelet, marked as a guess
    text = spec.read_text()
    assert yaml.safe_load(text)["spec"]["kubernetes"] == {"version": "1.35.4"}
    assert "  # TODO: version 1.35.4 is the newest kubeletVersion of the nodes (1.35.2, 1.35.4)" in text
    # AND with no version at all, the placeholder says it is one
    for n in nodes["items"]:
        del n["status"]["nodeInfo"]
    (folder / "nodes.json").write_text(json.dumps(nodes))
    printed = CliRunner().invoke(main, ["init", "--snapshot", str(folder)])
    assert "TODO: the snapshot gives no server or kubelet version: 1.36.1 is a placeholder" in printed.stdout
