"""What the two charts render for a set of values, modelled from their templates (no helm at runtime).

Sources (the reference copies in shared/reference/charts are unmodified):
- DRA driver: kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1 `deployments/helm/dra-driver-nvidia-gpu`
  (`values.yaml`, `templates/kubeletplugin.yaml`, `templates/deviceclass-*.yaml`,
  `templates/validation.yaml`, `_helpers.tpl` `resourceApiVersion`); NVIDIA/k8s-dra-driver-gpu
  v25.12.0 (`nvidia-dra-driver-gpu`) for the calendar releases.
- GPU Operator: NVIDIA/gpu-operator v26.3.1 `deployments/gpu-operator/values.yaml` and
  `templates/clusterpolicy.yaml` (`daemonsets.tolerations`, `devicePlugin.enabled`, `driver.manager`),
  its `node-feature-discovery` subchart values (`worker.tolerations`); the driver manager version per
  operator release from each tag's values.yaml (v26.3.0-1: v0.10.0, v26.3.2-3: v0.11.0, v26.7.0: v0.12.0).
Helm merges the user's values over the chart's defaults: mappings merge, lists and scalars
replace, `null` deletes (helm `chartutil.CoalesceValues`).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import yaml

from gpuplatform.kube.nodes import Node, Toleration, node_selector_matches
from gpuplatform.labels import GPU_PRESENT_LABEL, GPU_RESOURCE, NFD_NVIDIA_PCI_LABEL
from gpuplatform.versions import (
    CHART_BRIDGE_SINCE,
    DCGM_EXPORTER_DRA_ENV,
    GPU_OPERATOR_EXPORTER_DRA_SINCE,
    dra_driver_at_least,
    driver_manager_of,
    parse_release,
)

__all__ = [
    "DraDriverOutput",
    "OperatorOutput",
    "apply_patches",
    "helm_merge",
    "render_dra_driver",
    "render_gpu_operator",
]

_GPU_TOLERATION = {"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}
_NFD_AFFINITY = [
    [{"key": NFD_NVIDIA_PCI_LABEL, "operator": "In", "values": ["true"]}],
    [{"key": "feature.node.kubernetes.io/pci-0302_10de.present", "operator": "In", "values": ["true"]}],
    [{"key": "feature.node.kubernetes.io/pci-0300_10de.present", "operator": "In", "values": ["true"]}],
    [{"key": "feature.node.kubernetes.io/cpu-model.vendor_id", "operator": "In", "values": ["NVIDIA"]}],
    [{"key": GPU_PRESENT_LABEL, "operator": "In", "values": ["true"]}],
]


def _affinity(terms: list[list[dict[str, Any]]]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": t} for t in terms]
            }
        }
    }


#: values.yaml defaults that decide scheduling and classes (0.4.1 and 25.12.0).
_DRA_DEFAULTS: dict[str, dict[str, Any]] = {
    "0.4": {
        "resourceApiVersion": "",
        "gpuResourcesEnabledOverride": False,
        "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": True}},
        "kubeletPlugin": {
            "nodeSelector": {},
            "tolerations": [_GPU_TOLERATION],
            "affinity": _affinity(_NFD_AFFINITY),
        },
    },
    "25.12": {
        "resourceApiVersion": "",
        "gpuResourcesEnabledOverride": False,
        "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": True}},
        "kubeletPlugin": {
            "nodeSelector": {},
            "tolerations": [],
            "affinity": _affinity([_NFD_AFFINITY[0], _NFD_AFFINITY[3]]),
        },
    },
}

#: templates/deviceclass-*.yaml: name -> (selector, only with computeDomains).
_DRA_CLASSES: dict[str, tuple[str, bool]] = {
    "gpu.nvidia.com": (
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
        False,
    ),
    "mig.nvidia.com": (
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'",
        False,
    ),
    "vfio.gpu.nvidia.com": (
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'vfio'",
        False,
    ),
    "compute-domain-daemon.nvidia.com": (
        "device.driver == 'compute-domain.nvidia.com' && device.attributes['compute-domain.nvidia.com'].type == 'daemon'",
        True,
    ),
    "compute-domain-default-channel.nvidia.com": (
        "device.driver == 'compute-domain.nvidia.com' && device.attributes['compute-domain.nvidia.com'].type == 'channel'",
        True,
    ),
}

_OPERATOR_DEFAULTS: dict[str, Any] = {
    "daemonsets": {"tolerations": [_GPU_TOLERATION]},
    "nfd": {"enabled": True},
    "node-feature-discovery": {
        "worker": {
            "tolerations": [
                {
                    "key": "node-role.kubernetes.io/control-plane",
                    "operator": "Equal",
                    "value": "",
                    "effect": "NoSchedule",
                },
                _GPU_TOLERATION,
            ]
        }
    },
    "driver": {
        "enabled": True,
        "manager": {"version": "", "env": []},
        "upgradePolicy": {"autoUpgrade": True, "drain": {"enable": False}},
    },
    "toolkit": {"enabled": True},
    "devicePlugin": {"enabled": True},
    "dcgm": {"enabled": False},
    "dcgmExporter": {"enabled": True},
    "gfd": {"enabled": True},
    "migManager": {"enabled": True},
    "nodeStatusExporter": {"enabled": False},
    "validator": {"plugin": {"env": []}},
}


def helm_merge(defaults: Any, values: Any) -> Any:
    """Helm's coalesce of `values` over `defaults`: mappings merge, `None` deletes, the rest replaces."""
    if isinstance(defaults, dict) and isinstance(values, dict):
        out = copy.deepcopy(defaults)
        for key, value in values.items():
            if value is None:
                out.pop(key, None)
            else:
                out[key] = helm_merge(out.get(key), value)
        return out
    return copy.deepcopy(values)


def _required(affinity: Any) -> dict[str, Any]:
    node = (affinity or {}).get("nodeAffinity") or {}
    return dict(node.get("requiredDuringSchedulingIgnoredDuringExecution") or {})


@dataclass
class DraDriverOutput:
    """The DRA driver chart rendered for some values: the kubelet plugin's placement and the classes."""

    error: str = ""
    node_selector: dict[str, str] = field(default_factory=dict)
    affinity: dict[str, Any] = field(default_factory=dict)
    """The required node affinity (a v1 NodeSelector; empty: none)."""
    tolerations: list[Toleration] = field(default_factory=list)
    classes: dict[str, dict[str, Any]] = field(default_factory=dict)
    """name -> DeviceClass `spec` after the post-render patches."""

    def selects(self, labels: dict[str, str]) -> bool:
        """The kubelet plugin DaemonSet targets a node with these labels (nodeSelector and affinity)."""
        selector = all(labels.get(k) == str(v) for k, v in self.node_selector.items())
        return selector and (not self.affinity or node_selector_matches(self.affinity, Node("", labels)))


def _dra_family(version: str) -> str:
    release = parse_release(version)
    return "25.12" if release.parts[0] >= 25 else "0.4"


def render_dra_driver(
    version: str, values: dict[str, Any], patches: list[dict[str, Any]] | None = None
) -> DraDriverOutput:
    """Render the DRA driver chart `version` with `values` (Helm-merged over the chart defaults).

    `resourceApiVersion: ""` resolves to `resource.k8s.io/v1` (served from 1.34); the `gpu.nvidia.com`
    class carries `extendedResourceName: nvidia.com/gpu` exactly when that version is v1
    (templates/deviceclass-gpu.yaml); `validation.yaml` fails the render when GPUs are enabled
    without `gpuResourcesEnabledOverride`. `patches` are the post-render patches (Flux
    `postRenderers`, or the kustomize patches of the Argo CD wrapper).
    """
    merged: dict[str, Any] = helm_merge(_DRA_DEFAULTS[_dra_family(version)], values)
    resources = merged.get("resources") or {}
    gpus = bool((resources.get("gpus") or {}).get("enabled"))
    domains = bool((resources.get("computeDomains") or {}).get("enabled"))
    if gpus and not merged.get("gpuResourcesEnabledOverride"):
        return DraDriverOutput(
            error="validation.yaml: resources.gpus.enabled needs gpuResourcesEnabledOverride"
        )
    api = merged.get("resourceApiVersion") or "resource.k8s.io/v1"
    plugin = merged.get("kubeletPlugin") or {}
    bridged = dra_driver_at_least(parse_release(version), CHART_BRIDGE_SINCE)
    classes: dict[str, dict[str, Any]] = {}
    for name, (expression, domain_class) in _DRA_CLASSES.items():
        if (domains if domain_class else gpus) and (
            name != "vfio.gpu.nvidia.com" or _dra_family(version) == "0.4"
        ):
            spec: dict[str, Any] = {"selectors": [{"cel": {"expression": expression}}]}
            if name == "gpu.nvidia.com" and api == "resource.k8s.io/v1" and bridged:
                spec["extendedResourceName"] = GPU_RESOURCE
            classes[name] = spec
    out = DraDriverOutput(
        node_selector={str(k): str(v) for k, v in (plugin.get("nodeSelector") or {}).items()},
        affinity=_required(plugin.get("affinity")),
        tolerations=list(plugin.get("tolerations") or []),
        classes=classes,
    )
    if not gpus and not domains:
        out.error = "kubeletplugin.yaml: no kubelet plugin (resources.gpus and computeDomains disabled)"
    for patch in patches or []:
        apply_patches(out.classes, patch)
    return out


def _json_pointer(path: str) -> list[str]:
    return [p.replace("~1", "/").replace("~0", "~") for p in path.lstrip("/").split("/") if p]


def _json6902(obj: dict[str, Any], ops: list[dict[str, Any]]) -> None:
    for op in ops:
        parts = _json_pointer(str(op.get("path", "")))
        parent = obj
        for part in parts[:-1]:
            parent = parent.setdefault(part, {})
        last = parts[-1] if parts else ""
        if op.get("op") == "remove":
            if last not in parent:
                raise ValueError(f"remove operation does not apply: doc is missing path {op.get('path')}")
            del parent[last]
        elif op.get("op") in ("add", "replace"):
            parent[last] = op.get("value")


def apply_patches(classes: dict[str, dict[str, Any]], patch: dict[str, Any]) -> None:
    """Apply one kustomize patch (`{patch, target}`: JSON 6902 list or strategic merge) to the classes.

    Only DeviceClass targets matter to the model; a patch for other kinds changes nothing here.
    """
    target = patch.get("target") or {}
    body = (
        yaml.safe_load(str(patch.get("patch", "")))
        if isinstance(patch.get("patch"), str)
        else patch.get("patch")
    )
    if target.get("kind") not in (None, "DeviceClass"):
        return
    for name, spec in list(classes.items()):
        if target.get("name") not in (None, name):
            continue
        document = {"spec": spec}
        if isinstance(body, list):
            _json6902(document, body)
        elif isinstance(body, dict) and body.get("kind") in (None, "DeviceClass"):
            if (body.get("metadata") or {}).get("name") not in (None, name):
                continue
            if body.get("$patch") == "delete":
                del classes[name]
                continue
            document = helm_merge(document, {"spec": body.get("spec") or {}})
        classes[name] = document["spec"]


@dataclass
class OperatorOutput:
    """The ClusterPolicy the GPU Operator chart renders, as far as the migration depends on it."""

    device_plugin: bool
    operand_tolerations: list[Toleration]
    nfd: bool
    nfd_tolerations: list[Toleration]
    operands: tuple[str, ...]
    """Enabled operand names (`driver`, `container-toolkit`, `gpu-feature-discovery`, ...)."""
    eviction_label: str
    manager_version: str
    upgrade_drain: bool
    auto_upgrade: bool = True
    """`driver.upgradePolicy.autoUpgrade`: the operator's upgrade controller drains before the driver restarts."""
    gpu_pod_eviction: bool = True
    """The driver manager's ENABLE_GPU_POD_EVICTION (`true` in assets/state-driver/0500_daemonset.yaml)."""
    mig_strategy: str = "single"
    """`mig.strategy` (chart default `single`): the device plugin's MIG_STRATEGY (object_controls.go
    `applyMIGConfiguration`)."""
    operand_update: tuple[str, str] = ("RollingUpdate", "1")
    """`daemonsets.updateStrategy` and `.rollingUpdate.maxUnavailable` (chart defaults: one node at a
    time): how every operand DaemonSet but the driver's (always OnDelete) rolls after the values
    change (values.yaml and templates/clusterpolicy.yaml, v26.3.1)."""
    exporter_dra: bool = False
    """DCGM exporter runs in DRA mode: `dcgmExporter.env` KUBERNETES_ENABLE_DRA=true, which
    object_controls.go copies to the container (v26.3.1), or a release that sets it itself
    (versions.GPU_OPERATOR_EXPORTER_DRA_SINCE)."""


def _env(items: Any, name: str) -> str:
    for item in items or []:
        if isinstance(item, dict) and item.get("name") == name:
            return str(item.get("value", ""))
    return ""


def render_gpu_operator(version: str, values: dict[str, Any]) -> OperatorOutput:
    """Render the GPU Operator chart `version` with `values` (Helm-merged over the defaults).

    `templates/clusterpolicy.yaml` copies `daemonsets.tolerations` to the ClusterPolicy, and the
    operator replaces every operand DaemonSet's tolerations with them when set
    (controllers/object_controls.go `applyCommonDaemonsetConfig`, v26.3.1).
    """
    merged: dict[str, Any] = helm_merge(_OPERATOR_DEFAULTS, values)

    def on(key: str) -> bool:
        return bool((merged.get(key) or {}).get("enabled"))

    operands = [
        name
        for name, key in (
            ("driver", "driver"),
            ("container-toolkit", "toolkit"),
            ("device-plugin", "devicePlugin"),
            ("gpu-feature-discovery", "gfd"),
            ("dcgm", "dcgm"),
            ("dcgm-exporter", "dcgmExporter"),
            ("mig-manager", "migManager"),
            ("node-status-exporter", "nodeStatusExporter"),
        )
        if on(key)
    ]
    operands.append("operator-validator")
    driver = merged.get("driver") or {}
    manager = driver.get("manager") or {}
    release = parse_release(version)
    default_manager = f"v{driver_manager_of(release)}"
    daemonsets = merged.get("daemonsets") or {}
    nfd_worker = ((merged.get("node-feature-discovery") or {}).get("worker") or {}).get("tolerations")
    return OperatorOutput(
        device_plugin=on("devicePlugin"),
        operand_tolerations=list(daemonsets.get("tolerations") or [_GPU_TOLERATION]),
        nfd=on("nfd"),
        nfd_tolerations=list(nfd_worker or []),
        operands=tuple(operands),
        eviction_label=_env(manager.get("env"), "NODE_LABEL_FOR_GPU_POD_EVICTION"),
        manager_version=str(manager.get("version") or default_manager),
        upgrade_drain=bool(((driver.get("upgradePolicy") or {}).get("drain") or {}).get("enable")),
        auto_upgrade=bool((driver.get("upgradePolicy") or {}).get("autoUpgrade")),
        gpu_pod_eviction=_env(manager.get("env"), "ENABLE_GPU_POD_EVICTION").lower() != "false",
        mig_strategy=str((merged.get("mig") or {}).get("strategy") or "single"),
        operand_update=(
            str(daemonsets.get("updateStrategy") or "RollingUpdate"),
            str((daemonsets.get("rollingUpdate") or {}).get("maxUnavailable") or "1"),
        ),
        exporter_dra=on("dcgmExporter")
        and (
            release >= GPU_OPERATOR_EXPORTER_DRA_SINCE
            or _env((merged.get("dcgmExporter") or {}).get("env"), DCGM_EXPORTER_DRA_ENV).lower() == "true"
        ),
    )
