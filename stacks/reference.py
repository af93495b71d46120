"""The walkthrough cluster: one legacy node, one DRA node, one Hopper tier, one bridge, one pilot tenant.

Waves: baseline -> pilot-pool -> driver-validation -> native-claim-pilot -> compatibility-bridge
-> application -> final-cutover. `gpu-dra-01` moves to DRA in the pilot-pool wave; `gpu-legacy-01`
keeps the device plugin until the final cutover. Rendered into `dist/reference/`, with the
staging variant of `overlays/reference-staging.yaml` in `dist/reference-staging/`.
"""

from pathlib import Path

import yaml

from gpuplatform.model import (
    BridgeClass,
    ClaimTemplate,
    Delivery,
    DraDriver,
    GpuOperator,
    Kubernetes,
    NodePool,
    Platform,
    ServiceTier,
    Taint,
    Tenant,
    ValidationWorkload,
    Wave,
)

DOMAIN = "platform.example.com"
# Images pinned by digest (GP230). Not verifiable offline: the multi-platform index of
# alpine/k8s:1.36.1 and the linux/amd64 manifest of nvidia/cuda:12.9.1-base-ubuntu24.04 as public
# repositories pin them (three and four repositories agree). Check with `crane digest` before use.
GATE_IMAGE_DIGEST = "sha256:692239d739589247c4a791205ed9619c28ae85a21286e19a6211c04a62c56668"
CUDA_IMAGE = "docker.io/nvidia/cuda:12.9.1-base-ubuntu24.04"
CUDA_IMAGE_DIGEST = "sha256:5d2e53778e2180e01676aa8bac1aada242e95230ec97e21ecfb33de4e27cd1df"
HERE = Path(__file__).parent

overlays = ["../overlays/reference-staging.yaml"]

platform = Platform(
    name="reference",
    domain=DOMAIN,
    kubernetes=Kubernetes(version="1.36.1"),
    # The running operator is adopted in place: its values were imported from
    # `helm get values -n gpu-operator gpu-operator -o yaml` (gpuplatform import operator-values).
    gpu_operator=GpuOperator(
        version="26.3.1",
        namespace="gpu-operator",
        release_name="gpu-operator",
        driver_version="580.126.09",
        managed=True,
        values=yaml.safe_load((HERE / "values" / "gpu-operator.yaml").read_text()),
    ),
    # The chart comes from where 0.4.1 is published (oci://registry.k8s.io/dra-driver-nvidia/charts);
    # set chart_repository to use a mirror.
    dra_driver=DraDriver(
        chart_version="0.4.1",
        namespace="nvidia-dra-driver-gpu",
        nvidia_driver_root="/run/nvidia/driver",
    ),
    node_pools=[
        NodePool(name="legacy", nodes=["gpu-legacy-01"], product="H100-80GB", gpus_per_node=8),
        NodePool(
            name="dra-pilot",
            nodes=["gpu-dra-01"],
            product="H100-80GB",
            gpus_per_node=8,
            migrates_in="pilot-pool",
            taint=Taint(key=f"gpu-scheduling.{DOMAIN}/mode", value="dra", effect="NoSchedule"),
        ),
    ],
    tiers=[
        ServiceTier(
            name="nvidia-hopper-large-memory",
            description="Full Hopper GPUs with more than 40Gi of memory",
            architecture="Hopper",
            min_memory="40Gi",
        )
    ],
    # The 0.4.1 chart's own gpu.nvidia.com class already serves nvidia.com/gpu (GP121): name it as
    # the bridge instead of rendering a second class for the same extended resource.
    bridges=[
        BridgeClass(name="nvidia-gpu-legacy-bridge", extended_resource_name="nvidia.com/gpu", source="chart")
    ],
    tenants=[
        Tenant(
            name="gpu-dra-pilot",
            environment="development",
            tiers=["nvidia-hopper-large-memory"],
            groups=["gpu-dra-pilot-operators"],
            owner="ml-platform",
            cost_center="cc-4711",
            claim_templates=[
                ClaimTemplate(name="hopper-large-gpu", tier="nvidia-hopper-large-memory", count=1)
            ],
        )
    ],
    validation=ValidationWorkload(
        tenant="gpu-dra-pilot",
        claim_template="hopper-large-gpu",
        image=CUDA_IMAGE,
        image_digest=CUDA_IMAGE_DIGEST,
    ),
    waves=[
        Wave(name="baseline", stage="baseline", description="Device plugin everywhere; inventory taken."),
        Wave(name="pilot-pool", stage="pilot-pool", description="gpu-dra-01 leaves the device plugin."),
        Wave(name="driver-validation", stage="driver-validation", description="ResourceSlices published."),
        Wave(
            name="native-claim-pilot",
            stage="native-claim-pilot",
            description="One full-GPU claim through the Hopper tier.",
            tiers=["nvidia-hopper-large-memory"],
            tenants=["gpu-dra-pilot"],
        ),
        Wave(
            name="compatibility-bridge",
            stage="compatibility-bridge",
            description="Legacy nvidia.com/gpu requests may land on DRA nodes.",
            bridges=["nvidia-gpu-legacy-bridge"],
        ),
        Wave(name="application", stage="application", description="Workloads move to claims."),
        Wave(name="final-cutover", stage="final-cutover", description="Every GPU node on DRA."),
    ],
    active_wave="native-claim-pilot",
    delivery=Delivery(
        engines=["argocd", "flux"],
        repo_url="https://git.example.com/platform/gpu-fleet.git",
        kubectl_image_digest=GATE_IMAGE_DIGEST,
    ),
)
