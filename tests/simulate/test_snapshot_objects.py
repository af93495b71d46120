"""What the simulated cluster shows, object by object, as `gpuplatform snapshot` would read it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gpuplatform.cli import main
from gpuplatform.gates.matchers import is_device_plugin_pod, is_dra_kubelet_plugin_pod
from gpuplatform.load.stacks import load_stack
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.tree import render_tree
from gpuplatform.simulate.devices import DeviceMatcher
from gpuplatform.simulate.replay import replay_platform
from gpuplatform.simulate.snapshot import cluster_snapshot
from gpuplatform.simulate.world import World
from gpuplatform.snapshot.read import Snapshot
from tests.simulate.helpers import sim_spec
from tests.specs import write_spec


def _after_pilot(tmp_path: Path, changes: dict[str, Any] | None = None) -> Snapshot:
    """The lab's cluster once base -> pilot has settled (gpu-02 moved to DRA)."""
    doc = sim_spec()
    doc["spec"] |= changes or {}
    (loaded,) = load_stack(write_spec(tmp_path / "lab.yaml", doc))
    plan = plan_platform(loaded.platform)
    seen: dict[str, Snapshot] = {}

    def observe(world: World, what: str) -> None:
        if what == "after base -> pilot":
            seen["pilot"] = cluster_snapshot(world)

    results = replay_platform(
        plan, render_tree(plan), "flux", [("base", "pilot")], DeviceMatcher(loaded.platform), observe=observe
    )
    assert [r.violation for r in results if r.violation] == []
    return seen["pilot"]


def _named(items: list[dict[str, Any]] | None, name: str) -> dict[str, Any]:
    return next(i for i in items or [] if i["metadata"]["name"] == name)


def test_nodes_carry_the_kubelets_gfds_operators_and_engines_labels(tmp_path: Path) -> None:
    snapshot = _after_pilot(tmp_path)
    dra, legacy = _named(snapshot.kinds["nodes"], "gpu-02"), _named(snapshot.kinds["nodes"], "gpu-01")
    labels = dra["metadata"]["labels"]
    assert {k: labels[k] for k in ("kubernetes.io/hostname", "kubernetes.io/os", "kubernetes.io/arch")} == {
        "kubernetes.io/hostname": "gpu-02",
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
    }
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
    assert labels["nvidia.com/gpu.count"] == "8" and labels["nvidia.com/mig.capable"] == "true"
    assert labels["nvidia.com/gpu.present"] == "true" and labels["nvidia.com/gpu.deploy.driver"] == "true"
    assert labels["nvidia.com/dra-kubelet-plugin"] == "true"
    assert labels["nvidia.com/gpu.deploy.device-plugin"] == "false"
    # the device plugin advertises GPUs on the legacy node only
    assert "nvidia.com/gpu" not in dra["status"]["allocatable"]
    assert legacy["status"]["allocatable"]["nvidia.com/gpu"] == "4"


def test_pods_run_as_the_daemonsets_and_the_chart_run_them(tmp_path: Path) -> None:
    snapshot = _after_pilot(tmp_path)
    pods = snapshot.kinds["pods"] or []
    on = {node: [p for p in pods if p["spec"].get("nodeName") == node] for node in ("gpu-01", "gpu-02")}
    assert [p["spec"]["nodeName"] for p in pods if is_device_plugin_pod(p)] == ["gpu-01"]
    kubelet_plugins = [p for p in pods if is_dra_kubelet_plugin_pod(p, "nvidia-dra-driver-gpu")]
    assert [p["spec"]["nodeName"] for p in kubelet_plugins] == ["gpu-02"]
    assert all(s["ready"] for p in on["gpu-02"] for s in p["status"]["containerStatuses"])
    # the chart renders no controller Deployment without computeDomains
    assert not [p for p in pods if "controller" in p["metadata"]["name"]]
    slices = snapshot.kinds["resourceslices"] or []
    assert {s["spec"]["nodeName"] for s in slices} == {"gpu-02"}


def test_the_driver_controller_runs_where_the_chart_renders_it(tmp_path: Path) -> None:
    snapshot = _after_pilot(
        tmp_path,
        {"draDriver": {"chartRepository": "oci://registry.example.com/charts", "computeDomains": True}},
    )
    (controller,) = [p for p in snapshot.kinds["pods"] or [] if "controller" in p["metadata"]["name"]]
    assert controller["metadata"]["labels"] == {"dra-driver-nvidia-gpu-component": "controller"}
    kubelet_plugin = next(
        p for p in snapshot.kinds["pods"] or [] if is_dra_kubelet_plugin_pod(p, "nvidia-dra-driver-gpu")
    )
    assert [c["name"] for c in kubelet_plugin["spec"]["containers"]] == ["gpus", "compute-domains"]


def test_written_checkpoints_are_the_same_bytes_every_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With `SOURCE_DATE_EPOCH` (reproducible builds) the manifests' time is fixed too."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1764806400")
    spec = write_spec(tmp_path / "lab.yaml", sim_spec())
    runs = []
    for out in (tmp_path / "one", tmp_path / "two"):
        done = CliRunner().invoke(main, ["simulate", str(spec), "--write-snapshots", str(out)])
        assert done.exit_code == 0, done.output
        runs.append({str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()})
    assert runs[0] == runs[1] and len(runs[0]) > 100
