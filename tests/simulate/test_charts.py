"""The charts' model (charts/model.py) against the templates it claims to follow, and against helm."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuplatform.charts.extract import find_helm
from gpuplatform.charts.model import helm_merge, render_dra_driver, render_gpu_operator
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.helm_values import dra_driver_values, gpu_operator_values
from gpuplatform.render.operators import CHART_BRIDGE_PATCH
from tests.conftest import REPO, SHARED

CHARTS = SHARED / "reference" / "charts"
GPU = {"nvidia.com/gpu.present": "true", "feature.node.kubernetes.io/pci-10de.present": "true"}


def test_helm_merges_maps_and_replaces_lists_and_null_deletes() -> None:
    # helm chartutil.CoalesceValues
    defaults = {"a": {"b": 1, "c": [1, 2]}, "d": 1}
    assert helm_merge(defaults, {"a": {"c": [3]}, "d": None}) == {"a": {"b": 1, "c": [3]}}


def test_the_dra_chart_refuses_gpus_without_the_override() -> None:
    # templates/validation.yaml fails when resources.gpus.enabled and not gpuResourcesEnabledOverride
    assert "gpuResourcesEnabledOverride" in render_dra_driver("0.4.1", {}).error


def test_the_charts_class_bridges_on_v1_only_from_25_12() -> None:
    values = {"gpuResourcesEnabledOverride": True}
    assert (
        render_dra_driver("0.4.1", values).classes["gpu.nvidia.com"]["extendedResourceName"]
        == "nvidia.com/gpu"
    )
    assert (
        render_dra_driver("25.12.0", values).classes["gpu.nvidia.com"]["extendedResourceName"]
        == "nvidia.com/gpu"
    )
    assert "extendedResourceName" not in render_dra_driver("25.8.1", values).classes["gpu.nvidia.com"]
    v1beta2 = {**values, "resourceApiVersion": "resource.k8s.io/v1beta2"}
    assert "extendedResourceName" not in render_dra_driver("0.4.1", v1beta2).classes["gpu.nvidia.com"]


def test_the_post_render_patch_removes_the_bridge_and_nothing_else() -> None:
    out = render_dra_driver("0.4.1", {"gpuResourcesEnabledOverride": True}, [CHART_BRIDGE_PATCH])
    assert "extendedResourceName" not in out.classes["gpu.nvidia.com"]
    assert out.classes["gpu.nvidia.com"]["selectors"]
    assert set(out.classes) >= {"mig.nvidia.com", "compute-domain-daemon.nvidia.com"}


def test_the_kubelet_plugin_default_placement_is_every_gpu_node() -> None:
    # values.yaml: nodeSelector {}, affinity on NFD's NVIDIA PCI labels or nvidia.com/gpu.present
    out = render_dra_driver("0.4.1", {"gpuResourcesEnabledOverride": True})
    assert out.selects(GPU) and not out.selects({"kubernetes.io/os": "linux"})


def test_the_rendered_values_select_only_the_switched_nodes(reference: Any) -> None:
    out = render_dra_driver("0.4.1", dra_driver_values(plan_platform(reference)))
    assert out.selects(GPU | {"nvidia.com/dra-kubelet-plugin": "true"})
    assert not out.selects(GPU)
    assert not out.selects(GPU | {"nvidia.com/dra-kubelet-plugin": "paused-for-driver-upgrade"})


def test_the_operator_chart_defaults_and_the_rendered_values(reference: Any) -> None:
    default = render_gpu_operator("26.3.1", {})
    assert (default.device_plugin, default.eviction_label, default.manager_version) == (True, "", "v0.10.0")
    assert default.operand_tolerations == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    ]
    assert render_gpu_operator("26.7.0", {}).manager_version == "v0.12.0"
    plan = plan_platform(reference)
    ours = render_gpu_operator("26.3.1", gpu_operator_values(plan, plan.wave("final-cutover")))
    assert not ours.device_plugin and ours.eviction_label == "nvidia.com/dra-kubelet-plugin"
    taint = {
        "key": "gpu-scheduling.platform.example.com/mode",
        "operator": "Equal",
        "value": "dra",
        "effect": "NoSchedule",
    }
    assert taint in ours.operand_tolerations and taint in ours.nfd_tolerations


def _helm() -> str:
    binary = find_helm(REPO)
    if binary is None:
        pytest.skip("helm is not installed (.ci/setup-tools installs it into .tools/bin)")
    return binary


def _template(chart: str, values: dict[str, Any], tmp_path: Path) -> list[dict[str, Any]]:
    if not (CHARTS / chart).is_dir():
        pytest.skip(f"the reference chart {chart} is not beside the repository")
    file = tmp_path / "values.json"
    file.write_text(json.dumps(values))
    done = subprocess.run(
        [_helm(), "template", "r", str(CHARTS / chart), "-n", "nvidia-dra-driver-gpu", "-f", str(file)],
        capture_output=True,
        text=True,
        check=True,
    )
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def test_the_model_matches_helm_template_of_the_dra_chart(reference: Any, tmp_path: Path) -> None:
    plan = plan_platform(reference)
    values = dra_driver_values(plan)
    docs = _template("dra-driver-nvidia-gpu-0.4.1", values, tmp_path)
    model = render_dra_driver("0.4.1", values)
    classes = {d["metadata"]["name"]: d["spec"] for d in docs if d["kind"] == "DeviceClass"}
    assert {n: s.get("extendedResourceName", "") for n, s in classes.items()} == {
        n: s.get("extendedResourceName", "") for n, s in model.classes.items()
    }
    [plugin] = [
        d for d in docs if d["kind"] == "DaemonSet" and d["metadata"]["name"].endswith("kubelet-plugin")
    ]
    pod = plugin["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == model.node_selector and pod["tolerations"] == model.tolerations


def test_the_model_matches_helm_template_of_the_gpu_operator_chart(reference: Any, tmp_path: Path) -> None:
    plan = plan_platform(reference)
    values = gpu_operator_values(plan, plan.wave("pilot-pool"))
    docs = _template("gpu-operator-v26.3.1", values, tmp_path)
    model = render_gpu_operator("26.3.1", values)
    [policy] = [d["spec"] for d in docs if d["kind"] == "ClusterPolicy"]
    assert policy["daemonsets"]["tolerations"] == model.operand_tolerations
    assert policy["devicePlugin"]["enabled"] is model.device_plugin
    env = {e["name"]: e["value"] for e in policy["driver"]["manager"]["env"]}
    assert env["NODE_LABEL_FOR_GPU_POD_EVICTION"] == model.eviction_label
    [worker] = [
        d
        for d in docs
        if d["kind"] == "DaemonSet" and d["metadata"]["name"].endswith("feature-discovery-worker")
    ]
    assert worker["spec"]["template"]["spec"]["tolerations"] == model.nfd_tolerations
