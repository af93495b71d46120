"""A user's script that uses every public name of gpuplatform correctly: `mypy --strict` accepts it.

`tests/test_typed_api.py` type-checks it and runs it (the platform it builds is valid).
"""

from __future__ import annotations

from pathlib import Path

import gpuplatform as gp

version: str = gp.__version__
stages: tuple[gp.Stage, ...] = gp.STAGES

pilot = gp.Wave(name="pilot", stage="pilot-pool")
sharing: gp.Sharing = "exclusive"
tier = gp.ServiceTier(name="full", device_type="gpu", sharing=sharing, architecture="Hopper")
op: gp.SelectorOp = "GreaterThanOrEqual"
tenant = gp.Tenant(
    name="team-a",
    tiers=[tier],
    claim_templates=[gp.ClaimTemplate(name="one-gpu", tier=tier)],
    quota=gp.TenantQuota(devices=4),
    allow=gp.TenantAllowances(),
    gitops=gp.TenantGitOps(enabled=False),
)
platform = gp.Platform(
    name="lab",
    domain="lab.example.com",
    kubernetes=gp.Kubernetes(version="1.36.1"),
    gpu_operator=gp.GpuOperator(),
    dra_driver=gp.DraDriver(),
    node_pools=[
        gp.NodePool(
            name="new",
            nodes=["gpu-02"],
            product="H100-80GB",
            migrates_in=pilot,
            taint=gp.Taint(key="example.com/mode", value="dra"),
        ),
        gp.NodePool(
            name="karpenter",
            product="H100-80GB",
            provisioner=gp.Provisioner(kind="karpenter", name="gpus"),
        ),
    ],
    tiers=[tier],
    bridges=[gp.BridgeClass(name="legacy", extended_resource_name="nvidia.com/gpu", source="chart")],
    tenants=[tenant],
    tenant_policy=gp.TenantPolicy(),
    nim_services=[
        gp.NimService(
            name="llm",
            namespace="team-a",
            tier=tier,
            moves_in=pilot,
            attribute_selectors=[gp.AttributeSelector(key="architecture", value="Hopper")],
            capacity_selectors=[gp.CapacitySelector(key="memory", op=op, value="40Gi")],
        )
    ],
    workloads=[
        gp.Workload(
            kind="Deployment",
            namespace="team-a",
            name="trainer",
            gpus=1,
            tier="full",
            moves_in="pilot",
            tolerations=[gp.Toleration(key="example.com/gpu", operator="Exists")],
        )
    ],
    validation=gp.ValidationWorkload(tenant="team-a", claim_template="one-gpu"),
    waves=[gp.Wave(name="base", stage="baseline"), pilot],
    active_wave="pilot",
    delivery=gp.Delivery(repo_url="https://git.example.com/lab.git"),
    monitoring=gp.Monitoring(),
    accept=gp.Acceptances(),
    kueue=gp.Kueue(cluster_queues=[gp.ClusterQueue(name="gpus", tenants=[tenant], quotas={"new": 8})]),
)


def uses_the_functions(out: Path, snapshot: object) -> None:
    plan: gp.Plan = gp.plan_platform(platform)
    state: gp.WaveState = plan.wave("pilot")
    gates = gp.gates_for_wave(plan, state)
    selector: gp.PoolSelector = gp.pool_selector(platform.node_pools[0])
    tree = gp.render_tree(plan)
    loaded: list[gp.LoadedPlatform] = gp.load_stack(Path("stacks/reference.py"))
    files: dict[str, bytes] = gp.render_files(loaded[0], tree=tree)
    written, findings = gp.synth_tree(loaded, out)
    problems: list[gp.Problem] = findings
    drift = gp.check_tree(loaded, out)
    slices = gp.slices_for_node("gpu-02", "H100-80GB", 8)
    pools = gp.read_resource_slices(out / "slices.json")
    cel = gp.DeviceSelector('device.driver == "gpu.nvidia.com"')
    print(gates, selector, files, written, problems, drift, slices, pools, cel)
    try:
        raise gp.InputError([])
    except gp.GpuplatformError:
        pass
    except (gp.CelCompileError, gp.CelEvaluationError):
        pass
    print(gp.evaluate_wave, gp.convert_text)


def uses_the_verbs(out: Path, other: gp.Platform) -> int:
    reports: list[gp.Report] = [
        platform.plan(),
        platform.transition("base", "pilot"),
        platform.render(),
        platform.check(allow=["GP230"]),
        platform.simulate(from_wave="base", to_wave="pilot", engines=["flux"]),
        platform.capacity(wave="pilot"),
        platform.synth(out, fork=False, cache=out / "cache"),
        gp.synth(out, platform, other),
        platform.rehearse(out / "lab", source=__file__, from_wave="base", to_wave="pilot"),
    ]
    waves: list[str] = [w.name for w in platform.plan().plan.waves]
    files: dict[str, bytes] = platform.render().files
    written: list[str] = gp.synth(out, platform).written
    print(waves, files, written, [r.text() for r in reports], [r.as_dict() for r in reports])
    return max(r.exit_code for r in reports)
