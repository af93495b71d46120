"""The emulated Karpenter: what its drift hash counts (kubernetes-sigs/karpenter v1.14.1
`pkg/apis/v1/nodepool.go` `Hash`), and a Karpenter pool moved to DRA and back on a real control plane."""

from __future__ import annotations

import copy
from itertools import pairwise
from pathlib import Path

from gpuplatform.load.stacks import load_stack
from gpuplatform.plan.waves import plan_platform
from gpuplatform.rehearse.assets import Assets
from gpuplatform.rehearse.cluster import Rehearsal
from gpuplatform.rehearse.crds import read_crds
from gpuplatform.rehearse.karpenter import template_hash
from gpuplatform.rehearse.run import read_tree
from gpuplatform.rehearse.upstream import platform_crd_folders
from gpuplatform.rehearse.walk import Walker
from tests.rehearse.conftest import KARPENTER_POOL, synth_tree

NODEPOOL = {
    "spec": {
        "template": {
            "metadata": {"labels": {"team": "ml"}},
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}],
                "taints": [
                    {"key": "a", "effect": "NoSchedule"},
                    {"key": "b", "value": "1", "effect": "NoSchedule"},
                ],
                "expireAfter": "720h",
            },
        },
        "limits": {"nodes": 4},
    }
}


def _changed(change: object) -> bool:
    other = copy.deepcopy(NODEPOOL)
    change(other["spec"])  # type: ignore[operator]
    return template_hash(other) != template_hash(NODEPOOL)


def test_labels_and_taints_drift_the_nodes() -> None:
    assert _changed(lambda s: s["template"]["metadata"]["labels"].update(mode="dra"))
    assert _changed(lambda s: s["template"]["spec"]["taints"].append({"key": "c", "effect": "NoSchedule"}))
    assert _changed(lambda s: s["template"]["spec"].update(expireAfter="Never"))


def test_requirements_order_and_what_is_outside_the_template_do_not() -> None:
    # `requirements` is `hash:"ignore"` (its drift is judged apart), taints are a set
    assert not _changed(lambda s: s["template"]["spec"]["requirements"][0].update(values=["on-demand"]))
    assert not _changed(lambda s: s["template"]["spec"]["taints"].reverse())
    assert not _changed(lambda s: s.update(limits={"nodes": 8}))
    # IgnoreZeroValue: an empty label map is no label map
    assert not _changed(lambda s: s["template"]["metadata"].update(annotations={}))


def _pool_nodes(walker: Walker) -> dict[str, tuple[str, list[str]]]:
    """The pool's nodes: name -> (their mode label, their taints' keys)."""
    nodes = walker.cluster.client.list("Node")
    return {
        n["metadata"]["name"]: (
            n["metadata"]["labels"].get("gpu-scheduling.lab.example.com/mode", ""),
            sorted(t["key"] for t in n["spec"].get("taints") or []),
        )
        for n in nodes
        if n["metadata"]["labels"].get("karpenter.sh/nodepool") == "gpu-l40s"
    }


def test_the_runbooks_nodepool_patch_replaces_the_pools_nodes(
    tmp_path: Path, assets_136: Assets, crds: Path | None
) -> None:
    """`scale` patches the team's NodePool: Karpenter replaces both nodes with DRA ones (labels and
    taint from the template); the rollback patches it back and the nodes are replaced again."""
    tree = synth_tree(KARPENTER_POOL, tmp_path)
    [loaded] = load_stack(KARPENTER_POOL)
    plan = plan_platform(loaded.platform)
    folders = [crds] if crds is not None else platform_crd_folders(loaded.platform)
    with Rehearsal(plan, assets_136) as cluster:
        walker = Walker(
            cluster, plan, read_tree(tree, tree.name), tree, "flux", str(KARPENTER_POOL), read_crds(folders)
        )
        assert walker.bootstrap().violation is None
        before = _pool_nodes(walker)
        assert sorted(before) == ["l40s-node-0", "l40s-node-1"]
        for a, b in pairwise(plan.waves):
            assert walker.transition(a, b).violation is None
        dra = _pool_nodes(walker)
        assert walker.transition(plan.wave("scale"), plan.wave("validate")).violation is None
        back = _pool_nodes(walker)
        claims = cluster.client.list("NodeClaim")
    taint = "gpu-scheduling.lab.example.com/mode"
    assert dra == {"l40s-node-2": ("dra", [taint]), "l40s-node-3": ("dra", [taint])}
    assert back == {"l40s-node-4": ("legacy", []), "l40s-node-5": ("legacy", [])}
    assert sorted(c["status"]["nodeName"] for c in claims) == sorted(back)
