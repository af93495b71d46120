"""Hand-offs for the node provisioner: labels and the whole taint list per pool and wave."""

from __future__ import annotations

from gpuplatform.model import NodePool, Platform
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.handoff import render_pool_handoffs


def test_dra_pool_gets_its_taint_and_legacy_pool_the_taint_removed(reference: Platform) -> None:
    plan = plan_platform(reference)
    docs = {d["metadata"]["name"]: d["spec"] for d in render_pool_handoffs(plan, plan.wave("pilot-pool"))}
    taint = {"key": "gpu-scheduling.platform.example.com/mode", "value": "dra", "effect": "NoSchedule"}
    assert docs["dra-pilot"]["taints"] == [taint]
    assert docs["dra-pilot"]["removeTaints"] == []
    assert docs["legacy"]["taints"] == []
    assert docs["legacy"]["removeTaints"] == [taint]
    assert docs["dra-pilot"]["provisioner"] == {"kind": "static", "name": "dra-pilot"}


def test_karpenter_pool_gets_a_nodepool_patch(reference: Platform) -> None:
    auto = NodePool.model_validate(
        {
            "name": "auto",
            "product": "L40S",
            "provisioner": {"kind": "karpenter", "name": "gpu-l40s"},
            "migratesIn": "pilot-pool",
        }
    )
    plan = plan_platform(reference.model_copy(update={"node_pools": (auto,)}))
    docs = render_pool_handoffs(plan, plan.wave("pilot-pool"))
    patch = next(d for d in docs if d["kind"] == "NodePool")
    assert patch["apiVersion"] == "karpenter.sh/v1"
    assert patch["metadata"] == {"name": "gpu-l40s"}
    assert patch["spec"]["template"]["metadata"]["labels"]["nvidia.com/dra-kubelet-plugin"] == "true"
    # a merge patch replaces a whole list: the owner's other taints would go, so the taint is not in it
    assert "spec" not in patch["spec"]["template"]
