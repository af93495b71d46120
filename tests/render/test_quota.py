"""Closed-world quota: own tiers get the limit, every other class 0, the bridge class for the entitled."""

from __future__ import annotations

from gpuplatform.model import Platform
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.quota import tenant_quota


def _hard(reference: Platform, wave: str, **tenant_changes: object) -> dict[str, str]:
    tenant = reference.tenants[0].model_copy(update=tenant_changes)
    plan = plan_platform(reference.model_copy(update={"tenants": (tenant,)}))
    return dict(tenant_quota(plan, plan.wave(wave), tenant)["spec"]["hard"])


def test_own_tier_gets_the_limit_and_every_other_class_zero(reference_with_platform_bridge: Platform) -> None:
    hard = _hard(reference_with_platform_bridge, "compatibility-bridge")
    assert hard["nvidia-hopper-large-memory.platform.example.com.deviceclass.resource.k8s.io/devices"] == "8"
    for cls in (
        "gpu.nvidia.com",
        "mig.nvidia.com",
        "vfio.gpu.nvidia.com",
        "nvidia-gpu-legacy-bridge.platform.example.com",
    ):
        assert hard[f"{cls}.deviceclass.resource.k8s.io/devices"] == "0", cls
    assert hard["requests.nvidia.com/gpu"] == "0"
    assert hard["count/resourceclaims.resource.k8s.io"] == "16"
    assert hard["count/resourceclaimtemplates.resource.k8s.io"] == "8"


def test_bridge_entitled_tenant_may_use_the_classes_that_serve_the_bridge(
    reference_with_platform_bridge: Platform,
) -> None:
    hard = _hard(reference_with_platform_bridge, "compatibility-bridge", bridge=True)
    assert hard["requests.nvidia.com/gpu"] == "8"
    assert hard["nvidia-gpu-legacy-bridge.platform.example.com.deviceclass.resource.k8s.io/devices"] == "8"
    assert hard["gpu.nvidia.com.deviceclass.resource.k8s.io/devices"] == "0"  # patched: it bridges nothing
    assert hard["mig.nvidia.com.deviceclass.resource.k8s.io/devices"] == "0"


def _legacy_quota(plan: object, wave: str) -> int:
    from gpuplatform.plan.waves import Plan

    assert isinstance(plan, Plan)
    team_a = plan.platform.tenants[0]
    return int(tenant_quota(plan, plan.wave(wave), team_a)["spec"]["hard"]["requests.nvidia.com/gpu"])


def test_the_gpu_quota_covers_legacy_workloads_until_the_wave_after_they_move() -> None:
    from tests.admission.lab import DB_WORKLOAD, lab_plan

    # GIVEN trainer (Deployment, 4 replicas x 2 GPUs, moves in `app`) and the NIM service llm that
    # llm-dra replaces (1 GPU, 1 replica, moves in `nim`), both in team-a, which has no bridge
    plan = lab_plan()
    # THEN a rollout's surge pod is covered too (ceil(25%) of 4 = 1): 5 x 2 + 2 x 1
    assert [_legacy_quota(plan, w) for w in ("claims", "nim", "app", "cutover")] == [12, 12, 12, 10]
    earlier = lab_plan(workloads=[DB_WORKLOAD])
    # a StatefulSet replaces pods one by one: no surge; llm's coverage ends after `app`
    assert [_legacy_quota(earlier, w) for w in ("claims", "nim", "app", "cutover")] == [5, 5, 2, 0]
