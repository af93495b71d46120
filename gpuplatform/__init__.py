"""gpuplatform: move NVIDIA GPU scheduling from the device plugin to DRA, in waves, through GitOps.

The spec models are imported here; the rest of the public API is imported for type checkers and
IDEs (`TYPE_CHECKING`) and, at run time, on first use (PEP 562), so that `import gpuplatform`
stays cheap. `tests/test_public_api.py` holds the two lists to each other. Layers import each
other by module path, never from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpuplatform.model import (
    STAGES,
    Acceptances,
    AttributeSelector,
    BridgeClass,
    CapacitySelector,
    ClaimTemplate,
    ClusterQueue,
    Delivery,
    DraDriver,
    GpuOperator,
    Kubernetes,
    Kueue,
    Monitoring,
    NimService,
    NodePool,
    Platform,
    Provisioner,
    SelectorOp,
    ServiceTier,
    Sharing,
    Stage,
    Taint,
    Tenant,
    TenantAllowances,
    TenantGitOps,
    TenantPolicy,
    TenantQuota,
    Toleration,
    ValidationWorkload,
    Wave,
    Workload,
)
from gpuplatform.versions import SDK_VERSION as __version__

if TYPE_CHECKING:
    from gpuplatform.cel import CelCompileError as CelCompileError
    from gpuplatform.cel import CelEvaluationError as CelEvaluationError
    from gpuplatform.cel import DeviceSelector as DeviceSelector
    from gpuplatform.commands.report import Report as Report
    from gpuplatform.commands.synth import check_tree as check_tree
    from gpuplatform.commands.synth import render_files as render_files
    from gpuplatform.commands.synth import synth_tree as synth_tree
    from gpuplatform.commands.verbs import synth as synth
    from gpuplatform.convert.manifests import convert_text as convert_text
    from gpuplatform.errors import GpuplatformError as GpuplatformError
    from gpuplatform.errors import InputError as InputError
    from gpuplatform.errors import Problem as Problem
    from gpuplatform.evidence.evaluate import evaluate_wave as evaluate_wave
    from gpuplatform.gates import gates_for_wave as gates_for_wave
    from gpuplatform.gates.nodes import PoolSelector as PoolSelector
    from gpuplatform.gates.nodes import pool_selector as pool_selector
    from gpuplatform.inventory import read_resource_slices as read_resource_slices
    from gpuplatform.inventory import slices_for_node as slices_for_node
    from gpuplatform.load.stacks import LoadedPlatform as LoadedPlatform
    from gpuplatform.load.stacks import load_stack as load_stack
    from gpuplatform.plan.waves import Plan as Plan
    from gpuplatform.plan.waves import WaveState as WaveState
    from gpuplatform.plan.waves import plan_platform as plan_platform
    from gpuplatform.render.tree import render_tree as render_tree

#: public name -> module that defines it (imported on first use)
_LAZY: dict[str, str] = {
    "CelCompileError": "gpuplatform.cel",
    "CelEvaluationError": "gpuplatform.cel",
    "DeviceSelector": "gpuplatform.cel",
    "Report": "gpuplatform.commands.report",
    "check_tree": "gpuplatform.commands.synth",
    "render_files": "gpuplatform.commands.synth",
    "synth_tree": "gpuplatform.commands.synth",
    "synth": "gpuplatform.commands.verbs",
    "convert_text": "gpuplatform.convert.manifests",
    "GpuplatformError": "gpuplatform.errors",
    "InputError": "gpuplatform.errors",
    "Problem": "gpuplatform.errors",
    "evaluate_wave": "gpuplatform.evidence.evaluate",
    "gates_for_wave": "gpuplatform.gates",
    "PoolSelector": "gpuplatform.gates.nodes",
    "pool_selector": "gpuplatform.gates.nodes",
    "read_resource_slices": "gpuplatform.inventory",
    "slices_for_node": "gpuplatform.inventory",
    "LoadedPlatform": "gpuplatform.load.stacks",
    "load_stack": "gpuplatform.load.stacks",
    "Plan": "gpuplatform.plan.waves",
    "WaveState": "gpuplatform.plan.waves",
    "plan_platform": "gpuplatform.plan.waves",
    "render_tree": "gpuplatform.render.tree",
}

__all__ = [
    "STAGES",
    "Acceptances",
    "AttributeSelector",
    "BridgeClass",
    "CapacitySelector",
    "CelCompileError",
    "CelEvaluationError",
    "ClaimTemplate",
    "ClusterQueue",
    "Delivery",
    "DeviceSelector",
    "DraDriver",
    "GpuOperator",
    "GpuplatformError",
    "InputError",
    "Kubernetes",
    "Kueue",
    "LoadedPlatform",
    "Monitoring",
    "NimService",
    "NodePool",
    "Plan",
    "Platform",
    "PoolSelector",
    "Problem",
    "Provisioner",
    "Report",
    "SelectorOp",
    "ServiceTier",
    "Sharing",
    "Stage",
    "Taint",
    "Tenant",
    "TenantAllowances",
    "TenantGitOps",
    "TenantPolicy",
    "TenantQuota",
    "Toleration",
    "ValidationWorkload",
    "Wave",
    "WaveState",
    "Workload",
    "__version__",
    "check_tree",
    "convert_text",
    "evaluate_wave",
    "gates_for_wave",
    "load_stack",
    "plan_platform",
    "pool_selector",
    "read_resource_slices",
    "render_files",
    "render_tree",
    "slices_for_node",
    "synth",
    "synth_tree",
]

if not TYPE_CHECKING:  # a module __getattr__ would make every misspelt name valid to mypy

    def __getattr__(name: str) -> object:
        from importlib import import_module

        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module 'gpuplatform' has no attribute {name!r}")
        value = getattr(import_module(module), name)
        globals()[name] = value
        return value
