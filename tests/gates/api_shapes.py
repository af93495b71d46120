"""Clusters shaped the ways the API really serves them (issue 26, item 4): ResourceSlices that reach
nodes by selector, `allNodes` or per device; Nodes without status; a standalone device plugin."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from gpuplatform.testing import OPERATOR_NAMESPACE, Cluster, pod, ready

Mutation = Callable[[Cluster], None]
SAMPLES = Path(__file__).with_name("samples")
MODE = "gpu-scheduling.fleet.example.com/mode"
PLUGIN_IMAGE = "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"

#: The first `gpu.nvidia.com` slice of the real sample (driver 25.12.0 on Kubernetes 1.36), whole.
_SAMPLE_SLICE: dict[str, Any] = yaml.safe_load(
    (SAMPLES / "resourceslice-gpu.nvidia.com-v25.12.0-k8s-v1.36.yaml").read_text()
)["items"][0]
#: The GPU Operator's device-plugin DaemonSet asset, whose pod template a standalone plugin shares.
_PLUGIN_DAEMONSET: dict[str, Any] = yaml.safe_load(
    (SAMPLES / "state-device-plugin_0500_daemonset.yaml").read_text()
)


def sample_slice(name: str, **reach: Any) -> dict[str, Any]:
    """The sample slice renamed, reaching nodes by `reach` (`nodeName`, `nodeSelector`, `allNodes`,
    `perDeviceNodeSelection`) instead of its own `nodeName`."""
    out = copy.deepcopy(_SAMPLE_SLICE)
    out["metadata"]["name"] = f"{name}-gpu.nvidia.com-sample"
    del out["metadata"]["ownerReferences"]
    del out["spec"]["nodeName"]
    out["spec"]["pool"]["name"] = name
    out["spec"].update(reach)
    return out


def publish(**reach: Any) -> Mutation:
    def mutate(cluster: Cluster) -> None:
        cluster.list("resourceslices").append(sample_slice("wide", **reach))

    return mutate


def selector(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"nodeSelectorTerms": list(terms)}


def per_device(**device_reach: Any) -> Mutation:
    """A slice with `perDeviceNodeSelection`: its one device carries `device_reach`."""

    def mutate(cluster: Cluster) -> None:
        s = sample_slice("partitioned", perDeviceNodeSelection=True)
        s["spec"]["devices"][0].update(device_reach)
        cluster.list("resourceslices").append(s)

    return mutate


def label_node(name: str, key: str, value: str, then: Mutation) -> Mutation:
    def mutate(cluster: Cluster) -> None:
        next(n for n in cluster.list("nodes") if n["metadata"]["name"] == name)["metadata"]["labels"][key] = (
            value
        )
        then(cluster)

    return mutate


def strip_status(nodes: Callable[[Cluster], list[dict[str, Any]]], keep: dict[str, Any] | None) -> Mutation:
    """The first of `nodes` without `status` (keep None) or with `keep` as its status."""

    def mutate(cluster: Cluster) -> None:
        node = nodes(cluster)[0]
        if keep is None:
            del node["status"]
        else:
            node["status"] = copy.deepcopy(keep)

    return mutate


def standalone_plugin_pod(
    node_name: str, image: str = PLUGIN_IMAGE, namespace: str = "kube-system"
) -> dict[str, Any]:
    """A device-plugin pod without the GPU Operator's label: the asset's pod template, its images
    filled, made by its DaemonSet `nvidia-device-plugin-ds` in `namespace`."""
    template = copy.deepcopy(_PLUGIN_DAEMONSET["spec"]["template"]["spec"])
    for container in template["containers"] + template["initContainers"]:
        container["image"] = image
    spec = {k: v for k, v in template.items() if k not in ("containers", "nodeSelector")}
    owner = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "name": "nvidia-device-plugin-ds",
        "controller": True,
    }
    out = pod(
        f"nvidia-device-plugin-ds-{node_name}",
        namespace,
        node_name,
        labels={"name": "nvidia-device-plugin-ds"},
        owners=[{**owner, "uid": "uid-nvidia-device-plugin-ds", "blockOwnerDeletion": True}],
        containers=ready(*(c["name"] for c in template["containers"])),
        **spec,
    )
    out["spec"]["containers"] = template["containers"]
    return out


def gfd_pod(node_name: str) -> dict[str, Any]:
    """GPU Feature Discovery: the device plugin's image, but no device-plugin socket mount."""
    out = pod(
        f"gpu-feature-discovery-extra-{node_name}",
        OPERATOR_NAMESPACE,
        node_name,
        labels={"app.kubernetes.io/name": "gpu-feature-discovery"},
        containers=ready("gpu-feature-discovery"),
        volumes=[
            {"name": "output-dir", "hostPath": {"path": "/etc/kubernetes/node-feature-discovery/features.d"}}
        ],
    )
    out["spec"]["containers"] = [{"name": "gpu-feature-discovery", "image": PLUGIN_IMAGE}]
    return out


def add_pod(
    nodes: Callable[[Cluster], list[dict[str, Any]]], make: Callable[[str], dict[str, Any]]
) -> Mutation:
    def mutate(cluster: Cluster) -> None:
        cluster.list("pods").append(make(nodes(cluster)[0]["metadata"]["name"]))

    return mutate


def replace_operator_plugin(node_name: str, namespace: str = OPERATOR_NAMESPACE) -> Mutation:
    """The legacy node's device plugin is a standalone one (no operator label) in `namespace`."""

    def mutate(cluster: Cluster) -> None:
        pods = cluster.list("pods")
        pods[:] = [
            p
            for p in pods
            if not (
                p["spec"].get("nodeName") == node_name
                and p["metadata"]["labels"].get("app") == "nvidia-device-plugin-daemonset"
            )
        ]
        pods.append(standalone_plugin_pod(node_name, namespace=namespace))

    return mutate
