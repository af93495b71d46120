"""Closed-world quota as typed: own tiers get their limits (a total split over them), every other
class 0, the bridge class for the entitled; legacy GPUs and claim counts only when asked."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from gpuplatform.cli import main
from gpuplatform.model import Platform
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.quota import tenant_quota
from tests.specs import write_spec


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
    assert hard["requests.nvidia.com/gpu"] == "8"  # quota.gpus, as typed (its default)
    assert not any(k.startswith("count/") for k in hard)  # no claim counts unless typed


def test_claim_counts_only_when_typed(reference_with_platform_bridge: Platform) -> None:
    from gpuplatform.model import TenantQuota

    hard = _hard(reference_with_platform_bridge, "compatibility-bridge", quota=TenantQuota(claims=3))
    assert hard["count/resourceclaims.resource.k8s.io"] == "3"
    assert "count/resourceclaimtemplates.resource.k8s.io" not in hard


def test_bridge_entitled_tenant_may_use_the_classes_that_serve_the_bridge(
    reference_with_platform_bridge: Platform,
) -> None:
    hard = _hard(reference_with_platform_bridge, "compatibility-bridge", bridge=True)
    assert hard["requests.nvidia.com/gpu"] == "8"
    assert hard["nvidia-gpu-legacy-bridge.platform.example.com.deviceclass.resource.k8s.io/devices"] == "8"
    assert hard["gpu.nvidia.com.deviceclass.resource.k8s.io/devices"] == "0"  # patched: it bridges nothing
    assert hard["mig.nvidia.com.deviceclass.resource.k8s.io/devices"] == "0"


def _lab_hard(wave: str, quota: dict[str, object]) -> dict[str, str]:
    from tests.admission.lab import lab_plan, lab_spec

    tenants = lab_spec()["spec"]["tenants"]
    tenants[0]["quota"] = quota
    plan = lab_plan(tenants=tenants)
    return dict(tenant_quota(plan, plan.wave(wave), plan.platform.tenants[0])["spec"]["hard"])


def _devices(hard: dict[str, str]) -> dict[str, int]:
    return {
        k.split(".", 1)[0]: int(v)
        for k, v in hard.items()
        if k.endswith(".lab.example.com.deviceclass.resource.k8s.io/devices") and v != "0"
    }


def test_quota_renders_exactly_as_typed_a_total_across_tiers() -> None:
    # GIVEN team-a with tiers full and hopper, a total of 48 with 16 for hopper, 48 GPUs, no opt-in
    hard = _lab_hard("claims", {"devices": 48, "tiers": {"hopper": 16}, "gpus": 48})
    # THEN the per-class limits sum to the total (not 48 per tier), and the GPUs are 48, not 48 + legacy
    assert _devices(hard) == {"full": 32, "hopper": 16}
    assert hard["requests.nvidia.com/gpu"] == "48"
    assert not any(k.startswith("count/") for k in hard)
    # every tier typed, no total: each as typed
    assert _devices(_lab_hard("claims", {"tiers": {"full": 5, "hopper": 7}})) == {"full": 5, "hopper": 7}


def test_legacy_gpus_are_added_only_when_opted_in() -> None:
    typed = _lab_hard("claims", {"gpus": 4})
    opted = _lab_hard("claims", {"gpus": 4, "legacyWorkloads": True})
    # trainer 4 x 2 with a surge pod (10) and llm 1 x 1 with its surge (2)
    assert (typed["requests.nvidia.com/gpu"], opted["requests.nvidia.com/gpu"]) == ("4", "16")


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
    # THEN a rollout's surge pod is covered too (ceil(25%) of 4 = 1): 5 x 2 + 2 x 1, above quota.gpus 0
    assert [_legacy_quota(plan, w) for w in ("claims", "nim", "app", "cutover")] == [12, 12, 12, 10]
    earlier = lab_plan(workloads=[DB_WORKLOAD])
    # a StatefulSet replaces pods one by one: no surge; llm's coverage ends after `app`
    assert [_legacy_quota(earlier, w) for w in ("claims", "nim", "app", "cutover")] == [5, 5, 2, 0]


def test_the_old_per_tier_meaning_of_devices_is_a_clear_load_error(tmp_path: Path) -> None:
    from tests.admission.lab import lab_spec

    doc = lab_spec()
    doc["spec"]["tenants"][0]["quota"] = {"devices": 48, "gpus": 48}
    result = CliRunner().invoke(main, ["plan", str(write_spec(tmp_path / "lab.yaml", doc))])
    assert result.exit_code == 2, result.output
    assert "spec.tenants[0]" in result.output or "tenants.0" in result.output
    assert "quota.devices (48) is a total" in result.output and "full, hopper" in result.output
    doc["spec"]["tenants"][0]["quota"] = {"devices": 10, "tiers": {"full": 4, "hopper": 4}}
    result = CliRunner().invoke(main, ["plan", str(write_spec(tmp_path / "lab.yaml", doc))])
    assert result.exit_code == 2 and "quota.tiers sum to 8, not quota.devices 10" in result.output
    doc["spec"]["tenants"][0]["quota"] = {"tiers": {"ampere": 4}}
    result = CliRunner().invoke(main, ["plan", str(write_spec(tmp_path / "lab.yaml", doc))])
    assert result.exit_code == 2 and "quota.tiers names ampere, not among the tenant's tiers" in result.output
    doc["spec"]["tenants"][0]["quota"] = {"devices": 6, "tiers": {"full": 8}}
    result = CliRunner().invoke(main, ["plan", str(write_spec(tmp_path / "lab.yaml", doc))])
    assert result.exit_code == 2 and "quota.tiers sum to 8, above quota.devices 6" in result.output


def test_plan_prints_what_the_quota_adds_and_what_it_lacks(tmp_path: Path) -> None:
    from tests.admission.lab import lab_spec

    doc = lab_spec()
    doc["spec"]["tenants"][0]["quota"] = {"gpus": 4}
    result = CliRunner().invoke(main, ["plan", str(write_spec(tmp_path / "lab.yaml", doc))])
    assert "team-a: quota.gpus 4 < 12 needed by device-plugin workloads" in result.output
    doc["spec"]["tenants"][0]["quota"] = {"gpus": 4, "legacyWorkloads": True}
    result = CliRunner().invoke(main, ["plan", str(write_spec(tmp_path / "lab.yaml", doc))])
    assert "team-a: nvidia.com/gpu 4 + 12 (quota.legacyWorkloads: Deployment/trainer: 10" in result.output
