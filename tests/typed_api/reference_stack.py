"""The reference stack (`stacks/reference.py`) as a user writes it: every reference by object,
only `import gpuplatform`, and `platform.synth(out)`.

`tests/test_typed_api.py` type-checks it with `mypy --strict` and runs it: the tree it writes is
the committed `dist/reference/`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

import gpuplatform as gp

VALUES = Path(__file__).resolve().parents[2] / "stacks" / "values" / "gpu-operator.yaml"
DOMAIN = "platform.example.com"

hopper = gp.ServiceTier(
    name="nvidia-hopper-large-memory",
    description="Full Hopper GPUs with more than 40Gi of memory",
    architecture="Hopper",
    min_memory="40Gi",
)
bridge = gp.BridgeClass(
    name="nvidia-gpu-legacy-bridge", extended_resource_name="nvidia.com/gpu", source="chart"
)
hopper_gpu = gp.ClaimTemplate(name="hopper-large-gpu", tier=hopper, count=1)
pilot_tenant = gp.Tenant(
    name="gpu-dra-pilot",
    environment="development",
    tiers=[hopper],
    groups=["gpu-dra-pilot-operators"],
    owner="ml-platform",
    cost_center="cc-4711",
    claim_templates=[hopper_gpu],
)
baseline = gp.Wave(
    name="baseline", stage="baseline", description="Device plugin everywhere; inventory taken."
)
pilot_pool = gp.Wave(
    name="pilot-pool", stage="pilot-pool", description="gpu-dra-01 leaves the device plugin."
)
claims = gp.Wave(
    name="native-claim-pilot",
    stage="native-claim-pilot",
    description="One full-GPU claim through the Hopper tier.",
    tiers=[hopper],
    tenants=[pilot_tenant],
)
values: dict[str, Any] = yaml.safe_load(VALUES.read_text())

platform = gp.Platform(
    name="reference",
    domain=DOMAIN,
    kubernetes=gp.Kubernetes(version="1.36.1"),
    gpu_operator=gp.GpuOperator(
        version="26.3.1",
        namespace="gpu-operator",
        release_name="gpu-operator",
        driver_version="580.126.09",
        managed=True,
        values=values,
    ),
    dra_driver=gp.DraDriver(
        chart_version="0.4.1", namespace="nvidia-dra-driver-gpu", nvidia_driver_root="/run/nvidia/driver"
    ),
    node_pools=[
        gp.NodePool(name="legacy", nodes=["gpu-legacy-01"], product="H100-80GB", gpus_per_node=8),
        gp.NodePool(
            name="dra-pilot",
            nodes=["gpu-dra-01"],
            product="H100-80GB",
            gpus_per_node=8,
            migrates_in=pilot_pool,
            taint=gp.Taint(key=f"gpu-scheduling.{DOMAIN}/mode", value="dra", effect="NoSchedule"),
        ),
    ],
    tiers=[hopper],
    bridges=[bridge],
    tenants=[pilot_tenant],
    validation=gp.ValidationWorkload(
        tenant=pilot_tenant,
        claim_template=hopper_gpu.name,
        image="docker.io/nvidia/cuda:12.9.1-base-ubuntu24.04",
        image_digest="sha256:5d2e53778e2180e01676aa8bac1aada242e95230ec97e21ecfb33de4e27cd1df",
    ),
    waves=[
        baseline,
        pilot_pool,
        gp.Wave(name="driver-validation", stage="driver-validation", description="ResourceSlices published."),
        claims,
        gp.Wave(
            name="compatibility-bridge",
            stage="compatibility-bridge",
            description="Legacy nvidia.com/gpu requests may land on DRA nodes.",
            bridges=[bridge],
        ),
        gp.Wave(name="application", stage="application", description="Workloads move to claims."),
        gp.Wave(name="final-cutover", stage="final-cutover", description="Every GPU node on DRA."),
    ],
    active_wave=claims,
    delivery=gp.Delivery(
        engines=["argocd", "flux"],
        repo_url="https://git.example.com/platform/gpu-fleet.git",
        kubectl_image_digest="sha256:692239d739589247c4a791205ed9619c28ae85a21286e19a6211c04a62c56668",
    ),
)

if __name__ == "__main__":
    report: gp.Report = platform.synth(sys.argv[1])
    print(report.text())
    sys.exit(report.exit_code)
