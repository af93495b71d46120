"""gpuplatform: move NVIDIA GPU scheduling from the device plugin to DRA, in waves, through GitOps.

The public API is re-exported here lazily (PEP 562), so `import gpuplatform` stays cheap and the
CLI loads only what a command needs. Layers import each other by module path, never from here.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

#: public name -> module that defines it
_EXPORTS: dict[str, str] = {
    **{
        name: "gpuplatform.model"
        for name in (
            "Acceptances",
            "AttributeSelector",
            "BridgeClass",
            "CapacitySelector",
            "ClaimTemplate",
            "Delivery",
            "DraDriver",
            "GpuOperator",
            "Kubernetes",
            "Monitoring",
            "NimService",
            "NodePool",
            "Platform",
            "Provisioner",
            "ServiceTier",
            "Taint",
            "Tenant",
            "TenantAllowances",
            "TenantQuota",
            "ValidationWorkload",
            "Wave",
            "Workload",
        )
    },
    "GpuplatformError": "gpuplatform.errors",
    "InputError": "gpuplatform.errors",
    "Problem": "gpuplatform.errors",
    "LoadedPlatform": "gpuplatform.load.stacks",
    "load_stack": "gpuplatform.load.stacks",
    "Plan": "gpuplatform.plan.waves",
    "WaveState": "gpuplatform.plan.waves",
    "plan_platform": "gpuplatform.plan.waves",
    "render_tree": "gpuplatform.render.tree",
    "render_files": "gpuplatform.output.synth",
    "synth_tree": "gpuplatform.output.synth",
    "check_tree": "gpuplatform.output.synth",
    "DeviceSelector": "gpuplatform.cel",
    "CelCompileError": "gpuplatform.cel",
    "CelEvaluationError": "gpuplatform.cel",
    "slices_for_node": "gpuplatform.inventory",
    "read_resource_slices": "gpuplatform.inventory",
    "gates_for_wave": "gpuplatform.gates",
    "convert_text": "gpuplatform.convert.manifests",
}

__all__ = ["__version__", *sorted(_EXPORTS)]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'gpuplatform' has no attribute {name!r}")
    return getattr(import_module(module), name)
