"""The hand-off of a GPU Operator release gpuplatform does not render (`gpuOperator.managed: false`).

The running operator still needs the migration's settings (`helm_values.operator_settings`: the
driver manager's NODE_LABEL_FOR_GPU_POD_EVICTION, operand tolerations), or its driver manager cannot
unload the driver while the DRA kubelet plugin holds the GPUs: the chart sets no eviction label
(NVIDIA/gpu-operator v26.3.1, 8a633b58, `deployments/gpu-operator/values.yaml`
`driver.manager.env: []`), and k8s-driver-manager pauses a custom operand only through that variable
(NVIDIA/k8s-driver-manager v0.10.0 `cmd/driver-manager/main.go`, flag `nodeLabelForGPUPodEviction`,
env NODE_LABEL_FOR_GPU_POD_EVICTION; versions.DRIVER_MANAGER_EVICTION_LABEL_SINCE). They are written as a Helm values file
in the first wave's hand-off folder, which that wave's runbook applies with `helm upgrade
--reuse-values` before the merge. Helm replaces lists, so each list is the team's
(`gpuOperator.values`, as `gpuplatform import operator-values` reads it) with ours merged in.
JSON is YAML 1.2: `helm -f` reads it.
"""

from __future__ import annotations

import json
from typing import Any

from gpuplatform.plan.waves import Plan
from gpuplatform.render.helm_values import merge_values, operator_settings

__all__ = ["OPERATOR_HANDOFF_FILE", "operator_handoff", "operator_handoff_path", "operator_handoff_text"]

OPERATOR_HANDOFF_FILE = "gpu-operator-values.json"


def operator_handoff(plan: Plan) -> dict[str, Any] | None:
    """The values the running operator needs (None when gpuplatform renders the release)."""
    op = plan.platform.gpu_operator
    if op.managed:
        return None
    ours = operator_settings(plan.platform)
    values: dict[str, Any] = _shaped(merge_values(op.values, ours), ours)
    return values


def operator_handoff_path(plan: Plan) -> str | None:
    """`handoff/<first wave>/gpu-operator-values.json`, when there is a hand-off."""
    if plan.platform.gpu_operator.managed:
        return None
    return f"handoff/{plan.waves[0].dir_name}/{OPERATOR_HANDOFF_FILE}"


def operator_handoff_text(values: dict[str, Any]) -> str:
    """The values file: sorted keys, two-space indents, a final newline (same input, same bytes)."""
    return json.dumps(values, indent=2, sort_keys=True) + "\n"


def _shaped(merged: Any, shape: Any) -> Any:
    """`merged` cut to the keys `shape` has (lists and scalars whole)."""
    if isinstance(merged, dict) and isinstance(shape, dict):
        return {k: _shaped(merged[k], v) for k, v in shape.items()}
    return merged
