"""How the allocators and the GPU Operator's operands show up in a cluster: data in one place.

Sources:
- GPU Operator v26.3.1 assets (NVIDIA/gpu-operator): `state-device-plugin/0500_daemonset.yaml`
  (`app=nvidia-device-plugin-daemonset`), `state-driver/0500_daemonset.yaml`
  (`app.kubernetes.io/component=nvidia-driver`; the `app` label is renamed per OS or kernel in
  `controllers/object_controls.go`), `state-container-toolkit/0500_daemonset.yaml`,
  `gpu-feature-discovery/0500_daemonset.yaml`, `state-dcgm/0400_dcgm.yml`,
  `state-dcgm-exporter/0800_daemonset.yaml`, `state-mig-manager/0600_daemonset.yaml`: each DaemonSet
  runs where the node label `nvidia.com/gpu.deploy.<operand>=true`; `deployments/gpu-operator/
  values.yaml` for which operands are enabled by default (standalone `dcgm` is not).
- NVIDIA/k8s-device-plugin `api/config/v1`: every resource the device plugin advertises
  (`nvidia.com/gpu`, `nvidia.com/mig-<profile>`, time-sliced or MPS `rename`s and their `.shared`
  default rename) is prefixed with `nvidia.com/` (`NewResourceName`, `ResourceNamePrefix`).
- NVIDIA/k8s-device-plugin `deployments/static/nvidia-device-plugin.yml` (a standalone plugin,
  image `nvcr.io/nvidia/k8s-device-plugin`, no GPU Operator label): a device plugin registers its
  resource with the kubelet through the socket directory `/var/lib/kubelet/device-plugins`, which
  its pod mounts. GPU Feature Discovery and the MPS control daemon run the same image but do not
  mount it, so a pod is a device plugin by the operator's label, or by the image *and* that mount.
- dra-driver-nvidia-gpu chart v0.4.1 `templates/kubeletplugin.yaml` (DaemonSet
  `<chart name>-kubelet-plugin`) and `templates/controller.yaml` (Deployment `<chart name>-controller`,
  pods labelled `<chart name>-component: controller`, rendered when `resources.computeDomains.enabled`,
  on by default in `values.yaml`).
- nvidia-container-toolkit "Specialized Configurations": a container that sets
  `NVIDIA_VISIBLE_DEVICES` to `all`, indexes or UUIDs sees those GPUs whatever it requested; `none`
  keeps only the driver's capabilities, `void` or empty behaves as runc. The GPU stack's own pods
  (the device plugin, the operator's operands, the DRA kubelet plugin) do it by design.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from gpuplatform.labels import DEPLOY_LABEL_PREFIX
from gpuplatform.model.platform import DraDriver, GpuOperator

__all__ = [
    "DEVICE_PLUGIN_IMAGE",
    "DEVICE_PLUGIN_LABEL",
    "DEVICE_PLUGIN_SOCKETS",
    "DRA_CONTROLLER_COMPONENT",
    "DRA_DRIVER",
    "DRA_KUBELET_PLUGIN_SUFFIX",
    "GPU_STACK_DAEMONSET_PREFIXES",
    "NO_GPU_VISIBLE_DEVICES",
    "OPERANDS",
    "OPERAND_DAEMONSETS",
    "STACK_NAMESPACES",
    "VISIBLE_DEVICES",
    "Operand",
    "is_device_plugin_image",
    "is_device_plugin_pod",
    "is_dra_kubelet_plugin_pod",
    "is_gpu_stack_daemonset",
    "is_gpu_stack_pod",
    "shows_gpus",
    "stack_namespaces",
]

DEVICE_PLUGIN_LABEL = ("app", "nvidia-device-plugin-daemonset")
DEVICE_PLUGIN_IMAGE = "k8s-device-plugin"
DEVICE_PLUGIN_SOCKETS = "/var/lib/kubelet/device-plugins"
DRA_KUBELET_PLUGIN_SUFFIX = "-kubelet-plugin"
DRA_CONTROLLER_COMPONENT = ("-component", "controller")
DRA_DRIVER = "gpu.nvidia.com"
VISIBLE_DEVICES = "NVIDIA_VISIBLE_DEVICES"
#: Values of NVIDIA_VISIBLE_DEVICES that expose no GPU (compared in lower case).
NO_GPU_VISIBLE_DEVICES = ("", "none", "void")
#: DaemonSets of the GPU stack whose pods reach the GPUs by design (operands, plugins); the DRA
#: kubelet plugin's ends with `DRA_KUBELET_PLUGIN_SUFFIX`.
GPU_STACK_DAEMONSET_PREFIXES = ("nvidia-", "gpu-feature-discovery", "gpu-operator")
#: Where the GPU stack runs when no spec says otherwise (`inventory register` reads a snapshot
#: alone): the GPU Operator's and the DRA driver's namespaces as the model defaults them.
STACK_NAMESPACES: tuple[str, ...] = (
    GpuOperator.model_fields["namespace"].default,
    DraDriver.model_fields["namespace"].default,
)


@dataclass(frozen=True)
class Operand:
    """A GPU Operator operand: its pods' label and the node label that schedules it. Whether the
    operator deploys it is the chart's model's (`charts/model.py` `OperatorOutput.operands`)."""

    name: str
    label: tuple[str, str]
    deploy_label: str

    def as_data(self) -> dict[str, Any]:
        return {"name": self.name, "label": list(self.label), "deployLabel": self.deploy_label}


OPERANDS: tuple[Operand, ...] = (
    Operand("driver", ("app.kubernetes.io/component", "nvidia-driver"), f"{DEPLOY_LABEL_PREFIX}driver"),
    Operand(
        "container-toolkit",
        ("app", "nvidia-container-toolkit-daemonset"),
        f"{DEPLOY_LABEL_PREFIX}container-toolkit",
    ),
    Operand(
        "gpu-feature-discovery",
        ("app", "gpu-feature-discovery"),
        f"{DEPLOY_LABEL_PREFIX}gpu-feature-discovery",
    ),
    Operand("dcgm", ("app", "nvidia-dcgm"), f"{DEPLOY_LABEL_PREFIX}dcgm"),
    Operand(
        "dcgm-exporter",
        ("app", "nvidia-dcgm-exporter"),
        f"{DEPLOY_LABEL_PREFIX}dcgm-exporter",
    ),
    Operand("mig-manager", ("app", "nvidia-mig-manager"), f"{DEPLOY_LABEL_PREFIX}mig-manager"),
)


#: Operand -> (its DaemonSet, its pods' labels), from gpu-operator v26.3.1 `assets/state-*/`.
OPERAND_DAEMONSETS: dict[str, tuple[str, dict[str, str]]] = {
    "driver": ("nvidia-driver-daemonset", {"app": "nvidia-driver-daemonset"}),
    "container-toolkit": ("nvidia-container-toolkit-daemonset", {}),
    "device-plugin": ("nvidia-device-plugin-daemonset", dict([DEVICE_PLUGIN_LABEL])),
    "gpu-feature-discovery": ("gpu-feature-discovery", {}),
    "dcgm": ("nvidia-dcgm", {}),
    "dcgm-exporter": ("nvidia-dcgm-exporter", {}),
    "mig-manager": ("nvidia-mig-manager", {}),
    "node-status-exporter": ("nvidia-node-status-exporter", {"app": "nvidia-node-status-exporter"}),
    "operator-validator": ("nvidia-operator-validator", {"app": "nvidia-operator-validator"}),
}


def _labels(obj: dict[str, Any]) -> dict[str, Any]:
    return (obj.get("metadata") or {}).get("labels") or {}


def is_device_plugin_image(image: str) -> bool:
    """`image` (`[registry/]path/k8s-device-plugin[:tag][@digest]`) is the NVIDIA device plugin's."""
    last = image.split("@")[0].split("/")[-1]
    return last.split(":")[0] == DEVICE_PLUGIN_IMAGE


def is_device_plugin_pod(pod: dict[str, Any]) -> bool:
    """A device-plugin pod: the GPU Operator's (by its label) or any other (image and socket mount)."""
    key, value = DEVICE_PLUGIN_LABEL
    if _labels(pod).get(key) == value:
        return True
    spec = _mapping(pod.get("spec"))
    mounts = any(
        str(_mapping(_mapping(v).get("hostPath")).get("path") or "").removesuffix("/")
        == DEVICE_PLUGIN_SOCKETS
        for v in _list(spec.get("volumes"))
    )
    images = (str(_mapping(c).get("image") or "") for c in _list(spec.get("containers")))
    return mounts and any(is_device_plugin_image(image) for image in images)


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def shows_gpus(visible_devices: str) -> bool:
    """An `NVIDIA_VISIBLE_DEVICES` value that exposes GPUs (`all`, indexes, UUIDs) to its container."""
    return visible_devices.lower() not in NO_GPU_VISIBLE_DEVICES


def is_gpu_stack_daemonset(name: str) -> bool:
    """A DaemonSet of the GPU stack (the operator's operands, the device plugin, the DRA kubelet plugin)."""
    return name.startswith(GPU_STACK_DAEMONSET_PREFIXES) or name.endswith(DRA_KUBELET_PLUGIN_SUFFIX)


def _controller_daemonset(owner: Any) -> bool:
    """An owner reference the DaemonSet controller writes: apps/v1 DaemonSet, `controller: true`."""
    o = _mapping(owner)
    return o.get("kind") == "DaemonSet" and o.get("apiVersion") == "apps/v1" and o.get("controller") is True


def is_gpu_stack_pod(pod: dict[str, Any], namespaces: Collection[str] = STACK_NAMESPACES) -> bool:
    """A pod of the GPU stack, which reaches the GPUs by design: made by one of the stack's
    DaemonSets (the operator's operands and device plugin, the DRA kubelet plugin) in one of the
    stack's `namespaces` (the GPU Operator's and the DRA driver's). A tenant cannot create a pod
    there, so no label or owner name it gives its own pods makes them the stack's; the gate programs'
    `gpu_stack_pod` is the same rule."""
    meta = _mapping(pod.get("metadata"))
    owners = _list(meta.get("ownerReferences"))
    return (
        meta.get("namespace") in namespaces
        and any(_controller_daemonset(o) for o in owners)
        and any(
            _mapping(o).get("kind") == "DaemonSet"
            and is_gpu_stack_daemonset(str(_mapping(o).get("name", "")))
            for o in owners
        )
    )


def stack_namespaces(operator: GpuOperator, driver: DraDriver) -> tuple[str, ...]:
    """The namespaces a platform's GPU stack runs in: the GPU Operator's and the DRA driver's."""
    return (operator.namespace, driver.namespace)


def is_dra_kubelet_plugin_pod(pod: dict[str, Any], namespace: str) -> bool:
    """A pod of the DRA driver's kubelet-plugin DaemonSet in the driver's namespace."""
    meta = pod.get("metadata") or {}
    owners = meta.get("ownerReferences") or []
    return meta.get("namespace") == namespace and any(
        o.get("kind") == "DaemonSet" and str(o.get("name", "")).endswith(DRA_KUBELET_PLUGIN_SUFFIX)
        for o in owners
    )


#: DCGM exporter's pods (assets/state-dcgm-exporter/0800_daemonset.yaml, v26.3.1).
DCGM_EXPORTER_LABEL = ("app", "nvidia-dcgm-exporter")


def exporter_in_dra_mode(pod: dict[str, Any], env_name: str) -> bool:
    """Whether a DCGM exporter pod runs in DRA mode: a container with `env_name=true` or the flag
    `--kubernetes-enable-dra` (urfave/cli: bare or `=true`; NVIDIA/dcgm-exporter `pkg/cmd/app.go`)."""
    for container in _list(_mapping(pod.get("spec")).get("containers")):
        c = _mapping(container)
        env = {_mapping(e).get("name"): str(_mapping(e).get("value", "")) for e in _list(c.get("env"))}
        args = [str(a) for a in _list(c.get("args")) + _list(c.get("command"))]
        if env.get(env_name, "").lower() == "true" or any(
            a in ("--kubernetes-enable-dra", "--kubernetes-enable-dra=true") for a in args
        ):
            return True
    return False
