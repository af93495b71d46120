"""gpuplatform: move NVIDIA GPU scheduling from the device plugin to DRA, in waves, through GitOps.

The spec models are re-exported directly; the rest of the public API lazily (PEP 562), so that
`import gpuplatform` stays cheap. Layers import each other by module path, never from here.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

import gpuplatform.model as _model
from gpuplatform.versions import SDK_VERSION as __version__

#: public name -> module that defines it
_EXPORTS: dict[str, str] = {
    **{name: "gpuplatform.model" for name in _model.__all__},
    "GpuplatformError": "gpuplatform.errors",
    "InputError": "gpuplatform.errors",
    "Problem": "gpuplatform.errors",
    "LoadedPlatform": "gpuplatform.load.stacks",
    "load_stack": "gpuplatform.load.stacks",
    "Plan": "gpuplatform.plan.waves",
    "WaveState": "gpuplatform.plan.waves",
    "plan_platform": "gpuplatform.plan.waves",
    "render_tree": "gpuplatform.render.tree",
    "render_files": "gpuplatform.commands.synth",
    "synth_tree": "gpuplatform.commands.synth",
    "check_tree": "gpuplatform.commands.synth",
    "DeviceSelector": "gpuplatform.cel",
    "CelCompileError": "gpuplatform.cel",
    "CelEvaluationError": "gpuplatform.cel",
    "slices_for_node": "gpuplatform.inventory",
    "read_resource_slices": "gpuplatform.inventory",
    "gates_for_wave": "gpuplatform.gates",
    "pool_selector": "gpuplatform.gates.nodes",
    "PoolSelector": "gpuplatform.gates.nodes",
    "evaluate_wave": "gpuplatform.evidence.evaluate",
    "convert_text": "gpuplatform.convert.manifests",
}

__all__ = ["__version__", *sorted(_EXPORTS)]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'gpuplatform' has no attribute {name!r}")
    return getattr(import_module(module), name)
