"""Provisioner pools: capacity between a floor and a limit, for the pods the provisioner scales for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from gpuplatform.capacity.growth import pool_growth
from gpuplatform.capacity.report import WaveCapacity, plan_capacity
from gpuplatform.capacity.verdicts import runbook_capacity_notes
from gpuplatform.cli import main
from gpuplatform.model import ClaimTemplate, NodePool, Platform, Provisioner
from gpuplatform.plan.waves import Plan, plan_platform
from gpuplatform.render.runbooks import render_runbooks
from tests.capacity.fleets import platform, pool, provisioned, workload
from tests.specs import minimal_spec, write_spec

H100 = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}


def wave(p: Platform, name: str) -> WaveCapacity:
    (found,) = plan_capacity(plan_platform(p), [name])
    return found


def pool_use(result: WaveCapacity, name: str) -> tuple[int, int]:
    """(nodes, nodes added) of a pool in the wave's own moment."""
    use = next(u for u in result.moments[-1].outcome.pools if u.name == name)
    return use.nodes, use.added


def test_under_its_max_nodes_the_provisioner_adds_what_the_wave_needs() -> None:
    # GIVEN a Karpenter pool with one node, at most three, and 3 pods x 8 GPUs
    p = platform([provisioned("kp", max_nodes=3)], [workload("train", 3, 8)])
    # WHEN the baseline is placed
    result = wave(p, "base")
    # THEN it fits on three nodes, two of them added, and is tight at its limit
    assert result.fits and not result.depends and result.verdict == "tight"
    assert pool_use(result, "kp") == (3, 2)


def test_over_its_max_nodes_the_wave_does_not_fit_and_says_the_limit() -> None:
    p = platform([provisioned("kp", max_nodes=3)], [workload("train", 4, 8)])
    result = wave(p, "base")
    assert not result.fits
    (failure,) = result.moments[-1].outcome.failures
    assert failure.placed == 3
    assert "pool kp: karpenter kp-np is at its limit of 3 node(s)" in failure.reason


def test_a_karpenter_gpu_limit_bounds_the_nodes_by_gpus_per_node() -> None:
    p = platform([provisioned("kp", limits={"nvidia.com/gpu": "16"})], [workload("train", 3, 8)])
    assert pool_growth(p, p.node_pools[0]).limit == 2  # type: ignore[union-attr]
    result = wave(p, "base")
    assert not result.fits and "at its limit of 2 node(s)" in result.verdict
    assert wave(platform([provisioned("kp", limits={"nodes": 3})], [workload("train", 3, 8)]), "base").fits


def test_without_a_limit_the_verdict_depends_on_the_provisioner() -> None:
    # GIVEN a pool whose provisioner declares no limit, and more demand than its one node
    p = platform([provisioned("kp")], [workload("train", 10, 8)])
    result = wave(p, "base")
    # THEN the wave neither silently fits nor fails: it depends, naming how many nodes it needs
    assert result.fits and result.depends and not result.tight
    assert result.verdict == (
        "depends on the provisioner at base: pool kp needs 9 node(s) added by its provisioner "
        "(no maxNodes or limits declared)"
    )
    # AND demand its floor serves does not depend on anything
    assert wave(platform([provisioned("kp")], [workload("train", 1, 8)]), "base").verdict == "fits"


def test_limits_on_cpu_or_memory_leave_the_verdict_to_the_provisioner() -> None:
    limited = provisioned("kp", limits={"cpu": "1000", "nvidia.com/gpu": "80"})
    result = wave(platform([limited], [workload("train", 3, 8)]), "base")
    assert result.depends
    assert "its limits on cpu depend on instance types" in result.verdict


def test_karpenter_adds_no_node_for_claim_pods_by_default() -> None:
    # GIVEN a DRA pool of one 8-GPU node and two claims of 8 devices
    template = [ClaimTemplate(name="whole", tier="full", count=8, claims=2)]
    default = platform([provisioned("kp", migrates_in="pilot", max_nodes=2)], templates=template)
    # THEN Karpenter (IGNORE_DRA_REQUESTS) leaves the second pending
    (failure,) = wave(default, "claims").moments[-1].outcome.failures
    assert failure.placed == 1
    assert (
        "karpenter kp-np adds no nodes for pods with ResourceClaims (IGNORE_DRA_REQUESTS)" in failure.reason
    )
    # AND one that provisions for claims, or Cluster Autoscaler, adds the node
    scaling = provisioned("kp", migrates_in="pilot", max_nodes=2, scales_for_claims=True)
    assert wave(platform([scaling], templates=template), "claims").fits
    group = provisioned("kp", kind="node-group", migrates_in="pilot", max_nodes=2)
    result = wave(platform([group], templates=template), "claims")
    assert result.fits and pool_use(result, "kp") == (2, 1)


def test_karpenter_provisions_only_for_labels_its_nodepool_defines() -> None:
    # GIVEN pods selecting GPU Feature Discovery's product label, which a NodePool does not set
    pods = [workload("train", 2, 8, node_selector=H100)]
    karpenter = wave(platform([provisioned("kp", max_nodes=3)], pods), "base")
    # THEN the existing node takes one and Karpenter adds none for the other
    (failure,) = karpenter.moments[-1].outcome.failures
    assert failure.placed == 1
    assert (
        "karpenter kp-np's nodes are not known to carry nvidia.com/gpu.product as selected" in failure.reason
    )
    # AND Cluster Autoscaler, which copies an existing node of the group, does add one
    group = wave(platform([provisioned("kp", kind="node-group", max_nodes=3)], pods), "base")
    assert group.fits and pool_use(group, "kp") == (2, 1)


def test_a_mixed_fleet_fills_static_nodes_then_grows_the_provisioner_pool() -> None:
    p = platform([pool("static", 1), provisioned("kp", min_nodes=0, max_nodes=2)], [workload("t", 3, 8)])
    result = wave(p, "base")
    assert result.fits and pool_use(result, "static") == (1, 0) and pool_use(result, "kp") == (2, 2)


def test_a_drained_provisioner_pool_adds_nothing() -> None:
    pools = [pool("old", 1), provisioned("kp", migrates_in="move", max_nodes=2)]
    p = platform(pools, [workload("staying", 2, 8)])
    assert wave(p, "claims").fits
    drain, _ = wave(p, "move").moments
    assert drain.moment.drained == ("kp",) and not drain.fits


def test_the_growth_rules_refuse_pods_that_do_not_tolerate_the_nodepool_taints() -> None:
    p = platform([provisioned("kp", max_nodes=2)])
    growth = pool_growth(p, p.node_pools[0])
    assert growth is not None and growth.template is not None
    taint = {"key": "gpu", "value": "only", "effect": "NoSchedule"}
    labels = growth.template["legacy"]
    refusal = growth.refusal("legacy", labels, [taint], {}, [], False)
    assert refusal == "the pod does not tolerate the taints of karpenter kp-np's nodes"
    tolerated = [{"key": "gpu", "operator": "Exists"}]
    assert growth.refusal("legacy", labels, [taint], {}, tolerated, False) == ""


def test_limits_belong_to_karpenter_and_max_nodes_is_at_least_min_nodes() -> None:
    with pytest.raises(ValidationError, match="a node-group pool declares maxNodes"):
        Provisioner(kind="node-group", name="g", cloud="eks", limits={"nodes": 3})
    with pytest.raises(ValidationError, match="maxNodes 1 is below minNodes 2"):
        Provisioner(kind="karpenter", name="k", min_nodes=2, max_nodes=1)
    with pytest.raises(ValidationError, match=r"limits must not be negative: nvidia\.com/gpu"):
        Provisioner(kind="karpenter", name="k", limits={"nvidia.com/gpu": -8})
    with pytest.raises(ValidationError, match="Kubernetes quantity"):
        Provisioner(kind="karpenter", name="k", limits={"cpu": "lots"})
    NodePool(name="p", provisioner=Provisioner(kind="karpenter", name="k", limits={"nodes": 2}), product="x")


@pytest.mark.parametrize(
    ("kind", "labels", "extra"),
    [
        ("karpenter", {"karpenter.sh/nodepool": "kp-np"}, {}),
        ("node-group", {"eks.amazonaws.com/nodegroup": "kp-np"}, {}),
        (
            "cluster-api",
            {"node.cluster.x-k8s.io/pool": "gpu"},
            {"node_labels": {"node.cluster.x-k8s.io/pool": "gpu"}},
        ),
    ],
)
def test_every_provisioner_kind_finds_its_nodes_in_a_snapshot(
    tmp_path: Path, kind: str, labels: dict[str, str], extra: dict[str, object]
) -> None:
    from gpuplatform.capacity.run import stack_capacity
    from gpuplatform.load.documents import platform_document
    from gpuplatform.load.stacks import LoadedPlatform
    from gpuplatform.testing import Cluster, node

    # GIVEN a pool of each kind with two nodes carrying its labels, at most three, and 4 x 8 GPUs
    p = platform([provisioned("kp", kind, max_nodes=3, **extra)], [workload("train", 4, 8)])
    nodes = [node(f"kp-{i}", gpus="8", labels=labels) for i in range(2)] + [node("stray", gpus="8")]
    folder = Cluster(kinds={"nodes": nodes}).write(tmp_path / "snap")
    (result,) = stack_capacity(
        [LoadedPlatform(p, "lab.py", (), platform_document(p))], "base", False, str(folder)
    )
    # THEN its two nodes are found, one is added up to the limit, and the node no pool selects stays apart
    use = {u.name: (u.nodes, u.added, u.source) for u in result.moments[-1].outcome.pools}
    assert use["kp"] == (3, 1, "snapshot")
    assert use["(no pool), device plugin"] == (1, 0, "snapshot")
    assert result.fits


def test_capacity_exits_1_check_warns_gp282_and_the_runbook_says_it_depends(tmp_path: Path) -> None:
    spec = minimal_spec()
    spec["spec"]["nodePools"][0] = {
        "name": "old",
        "provisioner": {"kind": "karpenter", "name": "gpu-a100"},
        "product": "A100-40GB",
        "gpusPerNode": 4,
    }
    spec["spec"]["workloads"] = [
        {
            "kind": "Deployment",
            "namespace": "team-a",
            "name": "big",
            "gpus": 4,
            "replicas": 6,
            "tier": "full",
            "movesIn": "cutover",
        }
    ]
    stack = str(write_spec(tmp_path / "lab.yaml", spec))
    result = CliRunner().invoke(main, ["capacity", stack, "--wave", "base"])
    assert result.exit_code == 1
    assert "    base: fits only if a provisioner adds nodes;" in result.stdout
    assert "pool old [legacy] 4 node(s): 0/16 free; 3 added by its provisioner (no limit)" in result.stdout
    assert (
        "GP282 wave 'base' depends on the provisioner at base"
        in CliRunner().invoke(main, ["check", stack]).stderr
    )
    bounded = CliRunner().invoke(main, ["capacity", stack, "--wave", "base", "--format", "json"])
    assert json.loads(bounded.stdout)[0]["dependsOnProvisioner"] is True
    planned = CliRunner().invoke(main, ["plan", stack, "--from", "base", "--to", "pilot"])
    assert (
        "capacity: depends on the provisioner at base -> pilot: new drained: pool old needs" in planned.stdout
    )


def test_the_runbook_of_a_wave_that_depends_on_a_provisioner_says_so() -> None:
    p = platform([provisioned("kp")], [workload("train", 10, 8)])
    text = _runbooks(plan_platform(p))["00-base.md"]
    assert (
        "**Capacity: this wave fits only if the provisioner adds nodes.** depends on the provisioner" in text
    )


def _runbooks(plan: Plan) -> dict[str, str]:
    """The runbooks of `plan` with their capacity notes, as synth renders them."""
    return render_runbooks(plan, runbook_capacity_notes(plan))
