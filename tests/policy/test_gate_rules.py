"""Rules that keep the gates able to judge: pinned images, findable pools, pools that cannot be empty."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from gpuplatform.cli import main
from gpuplatform.load.stacks import load_stack
from gpuplatform.testing import wave_cluster
from tests.policy.helpers import codes, findings
from tests.specs import minimal_spec, write_spec

DIGEST = "sha256:" + "0" * 64


def test_gp230_tags_warn_and_digests_do_not(tmp_path: Path) -> None:
    doc = minimal_spec()
    doc["spec"]["validation"] = {"tenant": "team-a", "claimTemplate": "one-gpu"}
    found = {p.loc for p in findings(tmp_path, doc) if p.code == "GP230"}
    assert found == {"spec.delivery.kubectlImage", "spec.validation.image"}
    doc["spec"]["delivery"]["kubectlImageDigest"] = DIGEST
    doc["spec"]["validation"]["image"] = f"nvcr.io/nvidia/cuda:12.9.1-base-ubuntu24.04@{DIGEST}"
    assert "GP230" not in codes(tmp_path, doc)


def test_gp231_a_pool_the_gates_cannot_find(tmp_path: Path) -> None:
    doc = minimal_spec()
    doc["spec"]["nodePools"][1] = {
        "name": "new",
        "provisioner": {"kind": "cluster-api", "name": "md-gpu"},
        "product": "H100-80GB",
        "migratesIn": "pilot",
    }
    found = [p for p in findings(tmp_path, doc) if p.code == "GP231"]
    assert [p.loc for p in found] == ["spec.nodePools[1].provisioner"] and found[0].severity == "error"
    doc["spec"]["nodePools"][1]["provisioner"]["nodeLabels"] = {"node.cluster.x-k8s.io/pool": "gpu"}
    assert "GP231" not in codes(tmp_path, doc)


def test_gp232_an_empty_dra_pool_proves_nothing(tmp_path: Path) -> None:
    doc = minimal_spec()
    doc["spec"]["nodePools"][1] = {
        "name": "new",
        "provisioner": {"kind": "karpenter", "name": "gpu", "minNodes": 0},
        "product": "H100-80GB",
        "migratesIn": "pilot",
    }
    assert [p.loc for p in findings(tmp_path, doc) if p.code == "GP232"] == [
        "spec.nodePools[1].provisioner.minNodes"
    ]
    doc["spec"]["nodePools"][1]["provisioner"]["minNodes"] = 1
    assert "GP232" not in codes(tmp_path, doc)


def test_gp236_a_mig_resource_under_the_single_strategy(tmp_path: Path) -> None:
    # GIVEN the old A100 pool cut into 3g.20gb slices and a Deployment asking for one slice
    doc = minimal_spec()
    doc["spec"]["nodePools"][0]["migLayout"] = ["3g.20gb", "3g.20gb"]
    doc["spec"]["workloads"] = [
        {
            "kind": "Deployment",
            "namespace": "team-a",
            "name": "eval",
            "gpus": 1,
            "tier": "full",
            "resource": "nvidia.com/mig-3g.20gb",
            "movesIn": "claims",
        }
    ]
    # WHEN the running operator keeps the chart's `single` strategy: the slices are nvidia.com/gpu
    [found] = [p for p in findings(tmp_path, doc) if p.code == "GP236"]
    assert found.loc == "spec.workloads[0].resource" and found.severity == "error"
    assert "mig.strategy single" in found.message and "nvidia.com/gpu (old, new)" in found.message
    assert "spec.gpuOperator.values.mig.strategy (pools old then advertise" in found.hint
    # THEN declaring the strategy it runs, or asking for what the plugin advertises, settles it
    doc["spec"]["gpuOperator"] = {"values": {"mig": {"strategy": "mixed"}}}
    assert "GP236" not in codes(tmp_path, doc)
    doc["spec"]["gpuOperator"] = {}
    doc["spec"]["workloads"][0]["resource"] = "nvidia.com/gpu"
    assert "GP236" not in codes(tmp_path, doc)
    # AND a profile no pool is cut into has no strategy to suggest
    doc["spec"]["workloads"][0]["resource"] = "nvidia.com/mig-1g.5gb"
    [found] = [p for p in findings(tmp_path, doc) if p.code == "GP236"]
    assert found.hint == "ask for one of nvidia.com/gpu"


def test_gp234_a_layout_the_default_mig_config_does_not_apply(tmp_path: Path) -> None:
    # GIVEN an H100 pool cut into two 1g.10gb per GPU, naming no config: all-1g.10gb applies seven
    doc = minimal_spec()
    doc["spec"]["nodePools"][1]["migLayout"] = ["1g.10gb", "1g.10gb"]
    [found] = [p for p in findings(tmp_path, doc) if p.code == "GP234"]
    assert found.loc == "spec.nodePools[1].migLayout" and "all-1g.10gb" in found.message
    assert "applies 7" in found.message
    # WHEN the layout is the one the config applies, or the team names its own config: no finding
    doc["spec"]["nodePools"][1]["migLayout"] = ["1g.10gb"] * 7
    assert "GP234" not in codes(tmp_path, doc)
    doc["spec"]["nodePools"][1].update(migLayout=["1g.10gb", "1g.10gb"], migConfig="two-small")
    assert "GP234" not in codes(tmp_path, doc)


def test_gp235_a_live_mig_config_other_than_the_declared_layout(tmp_path: Path) -> None:
    # GIVEN an A100 pool cut into 3g.20gb and the model's cluster of it (the MIG manager applied it)
    doc = minimal_spec()
    doc["spec"]["nodePools"][0]["migLayout"] = ["3g.20gb", "3g.20gb"]
    (loaded,) = load_stack(write_spec(tmp_path / "lab.yaml", doc))
    cluster = wave_cluster(loaded.platform, "pilot")
    spec = str(tmp_path / "lab.yaml")
    healthy = CliRunner().invoke(main, ["check", spec, "--snapshot", str(cluster.write(tmp_path / "ok"))])
    assert "GP235" not in healthy.stderr
    # WHEN the node runs another config (someone relabelled it), or a whole-GPU pool's node one at all
    cluster.named("nodes", "gpu-01")["metadata"]["labels"]["nvidia.com/mig.config"] = "all-1g.5gb"
    cluster.named("nodes", "gpu-02")["metadata"]["labels"]["nvidia.com/mig.config"] = "all-1g.10gb"
    checked = CliRunner().invoke(main, ["check", spec, "--snapshot", str(cluster.write(tmp_path / "bad"))])
    # THEN each is an error at the pool's layout
    assert checked.exit_code == 1
    assert (
        "spec.nodePools[0].migLayout: GP235 node gpu-01 of pool 'old' runs nvidia.com/mig.config=all-1g.5gb, "
        "but the pool declares all-3g.20gb (2 x 3g.20gb per GPU)" in checked.stderr
    )
    assert (
        "GP235 node gpu-02 of pool 'new' runs nvidia.com/mig.config=all-1g.10gb, but the pool declares whole GPUs"
        in (checked.stderr)
    )
