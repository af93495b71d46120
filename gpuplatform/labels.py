"""Label keys and resource names, each defined once, with the upstream that sets or reads it.

Node labels that NVIDIA's software and NFD write or select, the extended resources the device
plugin advertises, and the `gpuplatform.dev/` labels and annotations this package puts on what it
renders. Every module reads them from here, so a key is spelled once and its source stated once.
"""

from __future__ import annotations

__all__ = [
    "BASE_ANNOTATION",
    "COST_CENTER_LABEL",
    "DEPLOY_LABEL_PREFIX",
    "DEVICE_PLUGIN_DEPLOY_LABEL",
    "DRA_PLUGIN_LABEL",
    "ENVIRONMENT_LABEL",
    "GATE_LABEL",
    "GATE_PHASE_LABEL",
    "GATE_TITLE_ANNOTATION",
    "GPU_COUNT_LABEL",
    "GPU_PRESENT_LABEL",
    "GPU_PRODUCT_LABEL",
    "GPU_RESOURCE",
    "LIFECYCLE_LABEL",
    "MIG_CAPABLE_LABEL",
    "MIG_CONFIG_LABEL",
    "MIG_CONFIG_STATE_LABEL",
    "MIG_RESOURCE_PREFIX",
    "MIG_STRATEGY_LABEL",
    "NFD_NVIDIA_PCI_LABEL",
    "NVIDIA_RESOURCE_PREFIX",
    "OVERLAYS_ANNOTATION",
    "OWNER_LABEL",
    "PROBE_LABEL",
    "SHARED_GPU_RESOURCE",
    "SWITCH_LABEL",
    "TENANT_LABEL",
    "TENANT_NAMESPACE_LABEL",
    "VALIDATION_LABEL",
    "VALIDATOR_DEPLOY_LABEL",
    "WAVE_LABEL",
]

# Extended resources of the NVIDIA device plugin.

#: The prefix of every resource the NVIDIA device plugin advertises (`nvidia.com/gpu`,
#: `nvidia.com/mig-<profile>`, renamed and shared resources: NVIDIA/k8s-device-plugin `api/config/v1`
#: `ResourceNamePrefix`); nodes count them, so no logical resource of the platform may be one.
NVIDIA_RESOURCE_PREFIX = "nvidia.com/"
#: What the device plugin advertises for a whole GPU (and, under the `single` MIG strategy, for a
#: MIG device), what legacy workloads request, and what a DRA DeviceClass's `extendedResourceName`
#: bridges (NVIDIA/k8s-device-plugin v0.19.0 `internal/rm/device_map.go`).
GPU_RESOURCE = "nvidia.com/gpu"
#: A time-sliced GPU advertised under its shared name (`sharing.timeSlicing.renameByDefault`:
#: NVIDIA/k8s-device-plugin `api/config/v1`, `<resource>.shared`).
SHARED_GPU_RESOURCE = "nvidia.com/gpu.shared"
#: A MIG device under the `mixed` strategy: `nvidia.com/mig-<profile>`
#: (NVIDIA/k8s-device-plugin v0.19.0 `internal/rm/device_map.go`).
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"

# Node labels of NFD, GPU Feature Discovery, the GPU Operator and the MIG manager.

#: NFD's label for a node with an NVIDIA PCI device (vendor 10de); the GPU Operator labels such a
#: node a GPU node (NVIDIA/gpu-operator v26.3.1 `controllers/state_manager.go` `labelGPUNodes`).
NFD_NVIDIA_PCI_LABEL = "feature.node.kubernetes.io/pci-10de.present"
#: `true` on every GPU node the GPU Operator found (v26.3.1 `controllers/state_manager.go`).
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
#: GFD: the GPU's product name, spaces as `-`, `-MIG-<profile>` under the single strategy
#: (NVIDIA/k8s-device-plugin `internal/lm/resource.go`).
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
#: GFD: how many `nvidia.com/gpu` the node has (`internal/lm/resource.go`).
GPU_COUNT_LABEL = "nvidia.com/gpu.count"
#: GFD: the MIG strategy, `none`, `single` or `mixed`.
MIG_STRATEGY_LABEL = "nvidia.com/mig.strategy"
#: GFD: `true` on a node whose GPUs can be partitioned (H100, A100, A30).
MIG_CAPABLE_LABEL = "nvidia.com/mig.capable"
#: The MIG manager applies the mig-parted config this node label names (gpu-operator v26.3.1
#: ClusterPolicy CRD `migManager.config`: "node label nvidia.com/mig.config").
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
#: The MIG manager's progress on `nvidia.com/mig.config`: `pending`, `success`, `failed`
#: (NVIDIA/mig-parted v0.14.0 `pkg/mig/reconfigure/reconfigure.go`).
MIG_CONFIG_STATE_LABEL = "nvidia.com/mig.config.state"
#: `nvidia.com/gpu.deploy.<operand>`: each operand DaemonSet selects `"true"`; the operator sets an
#: absent one to `true` and keeps a present value (v26.3.1 `controllers/state_manager.go`
#: `addGPUStateLabels`, `assets/state-*/0500_daemonset.yaml`).
DEPLOY_LABEL_PREFIX = "nvidia.com/gpu.deploy."
#: `false` takes the device plugin off a node (DRA pools).
DEVICE_PLUGIN_DEPLOY_LABEL = f"{DEPLOY_LABEL_PREFIX}device-plugin"
#: `false` takes the operator-validator off a node (NVIDIA/gpu-operator#2550, `versions.py`).
VALIDATOR_DEPLOY_LABEL = f"{DEPLOY_LABEL_PREFIX}operator-validator"
#: Where the DRA driver's kubelet plugin runs (its DaemonSet's node selector, as this package
#: renders the chart's values); the driver manager pauses it during a driver upgrade.
DRA_PLUGIN_LABEL = "nvidia.com/dra-kubelet-plugin"

# This package's own labels and annotations.

#: The wave a rendered hook object belongs to.
WAVE_LABEL = "gpuplatform.dev/wave"
#: Labels every hook object (gate, switch and validation Jobs, the gates' facts) carries: kept as
#: evidence while its wave is active, deleted when the next wave is applied (`render/hook_cleanup.py`).
LIFECYCLE_LABEL = "gpuplatform.dev/lifecycle"
#: A gate Job's gate id; a snapshot keeps its pods' logs.
GATE_LABEL = "gpuplatform.dev/gate"
#: A gate Job's title, for a person reading the cluster.
GATE_TITLE_ANNOTATION = "gpuplatform.dev/gate-title"
#: `pre` or `post`: which sync hook a gate or validation Job runs in.
GATE_PHASE_LABEL = "gpuplatform.dev/gate-phase"
#: A validation workload's name; a snapshot keeps its pods' logs.
VALIDATION_LABEL = "gpuplatform.dev/validation"
#: An allocator-switch Job's action.
SWITCH_LABEL = "gpuplatform.dev/switch"
#: A rehearsal's probe copy of a gate (`rehearse/sensitivity.py`).
PROBE_LABEL = "gpuplatform.dev/probe"
#: A tenant's name, owner, cost center and environment, on its Namespace and claims.
TENANT_LABEL = "gpuplatform.dev/tenant"
OWNER_LABEL = "gpuplatform.dev/owner"
COST_CENTER_LABEL = "gpuplatform.dev/cost-center"
ENVIRONMENT_LABEL = "gpuplatform.dev/environment"
#: Label of a tenant's objects that live outside its namespace (the AppProject): the namespace whose
#: `40-tenants/` folder holds them.
TENANT_NAMESPACE_LABEL = "gpuplatform.dev/tenant-namespace"
#: On a spec: the overlays it declares (rendered as variants with it); on an overlay: the stack it
#: merges onto.
OVERLAYS_ANNOTATION = "gpuplatform.dev/overlays"
BASE_ANNOTATION = "gpuplatform.dev/base"
