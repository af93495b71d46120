"""The GPU stack's controllers as the rehearsal runs them: the GPU Operator (ClusterPolicy mode) with
NFD, and what the DRA driver's Helm release installs. Only their decisions are emulated; the objects
they create are real, so the DaemonSet controller places the pods and the scheduler reads the classes.

- GPU Operator (NVIDIA/gpu-operator v26.3.1, as `simulate/operator.py` cites it): a node with NFD's
  NVIDIA PCI label gets `nvidia.com/gpu.present=true` and each absent `nvidia.com/gpu.deploy.<operand>`
  set to `true` (a present value is kept); one DaemonSet per enabled operand, named and labelled as
  its asset, selecting `nvidia.com/gpu.deploy.<operand>=true` and tolerating
  `daemonsets.tolerations` and rolling as `daemonsets.updateStrategy` says (the driver's on delete);
  the DCGM exporter carries KUBERNETES_ENABLE_DRA when the values say so.
- DRA driver chart (kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1 as `charts/model.py` renders it):
  the DaemonSet `<chart>-kubelet-plugin` with the chart's nodeSelector, required affinity and
  tolerations, and the DeviceClasses after the post-render patches. The controller Deployment
  (compute domains) is not installed: no gate of a rendered tree waits for it yet.

The operator's values: the release the engine installed, or (`gpuOperator.managed` false) the spec's
values merged with what the runbook's `helm upgrade --reuse-values` gave the running release.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from gpuplatform.charts.facts import chart_facts
from gpuplatform.charts.model import DraDriverOutput, OperatorOutput, render_dra_driver, render_gpu_operator
from gpuplatform.gates.matchers import DRA_KUBELET_PLUGIN_SUFFIX, OPERAND_DAEMONSETS, OPERANDS
from gpuplatform.labels import (
    DEPLOY_LABEL_PREFIX,
    GPU_PRESENT_LABEL,
    GPU_PRODUCT_LABEL,
    MIG_CAPABLE_LABEL,
    NFD_NVIDIA_PCI_LABEL,
)
from gpuplatform.plan.waves import Plan
from gpuplatform.rehearse.client import ApiError, Client, Obj
from gpuplatform.render.helm_values import merge_values
from gpuplatform.simulate.groups import mig_capable
from gpuplatform.simulate.operator import STATE_LABELS
from gpuplatform.simulate.rendered import DRA_CHARTS, OPERATOR_CHARTS, ReleaseSpec
from gpuplatform.versions import DCGM_EXPORTER_DRA_ENV

__all__ = ["GpuStack"]

_MANAGER = "rehearsal-gpu-stack"
_OPERAND_LABELS = {o.name: dict([o.label]) for o in OPERANDS}


def _daemonset(
    name: str, namespace: str, pod_labels: dict[str, str], spec: dict[str, Any], containers: list[Obj]
) -> Obj:
    selector = {"app.kubernetes.io/name": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/managed-by": _MANAGER},
        },
        "spec": {
            "selector": {"matchLabels": selector},
            "template": {
                "metadata": {"labels": {**pod_labels, **selector}},
                "spec": {**spec, "containers": containers, "terminationGracePeriodSeconds": 30},
            },
        },
    }


def _update_strategy(operand: str, out: OperatorOutput) -> Obj:
    """The operand DaemonSet's `updateStrategy`: the driver's is always OnDelete, the others follow
    `daemonsets.updateStrategy` (`OperatorOutput.operand_update`)."""
    kind, unavailable = out.operand_update
    if operand == "driver" or kind == "OnDelete":
        return {"type": "OnDelete"}
    rolling = int(unavailable) if unavailable.isdigit() else unavailable
    return {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": rolling}}


@dataclass
class GpuStack:
    """The installed GPU Operator and DRA driver releases, and what their controllers keep in place."""

    client: Client
    plan: Plan
    operator: ReleaseSpec | None = None
    driver: ReleaseSpec | None = None
    helm_state: Path | None = None
    """Where the `helm` fake keeps what `helm upgrade --reuse-values` gave a running release."""
    _applied: dict[str, Obj] = field(default_factory=dict)

    @property
    def operator_namespace(self) -> str:
        return self.plan.platform.gpu_operator.namespace

    @property
    def driver_namespace(self) -> str:
        return self.plan.platform.dra_driver.namespace

    def operator_output(self) -> OperatorOutput:
        """The ClusterPolicy now: the release an engine installed, else the running one (a managed
        release upgrades it in place) with the spec's values and what `helm upgrade` gave it."""
        spec = self.plan.platform.gpu_operator
        if self.operator is not None:
            return _operator(self.operator.version, json.dumps(self.operator.values, sort_keys=True))
        values = merge_values(dict(spec.values), self._upgraded(spec.release_name))
        return _operator(spec.version, json.dumps(values, sort_keys=True))

    def _upgraded(self, release: str) -> dict[str, Any]:
        """The values `helm upgrade --reuse-values` merged into the running release `release`."""
        path = self.helm_state / f"{release}.json" if self.helm_state is not None else None
        if path is None or not path.is_file():
            return {}
        values: dict[str, Any] = json.loads(path.read_text())
        return values

    def driver_output(self) -> DraDriverOutput | None:
        if self.driver is None:
            return None
        return render_dra_driver(self.driver.version, self.driver.values, self.driver.patches)

    def driver_release(self) -> str:
        return self.driver.version if self.driver is not None else ""

    def mig_strategy(self) -> str:
        return self.operator_output().mig_strategy

    def install(self, release: ReleaseSpec) -> None:
        """A release the engine installs or upgrades (by its chart)."""
        if release.chart in OPERATOR_CHARTS:
            self.operator = release
        elif release.chart in DRA_CHARTS:
            self.driver = release

    def uninstall(self, chart: str) -> None:
        if chart in OPERATOR_CHARTS:
            self.operator = None
        elif chart in DRA_CHARTS:
            self.driver = None

    def installed(self) -> set[str]:
        """Charts installed by an engine now."""
        return {r.chart for r in (self.operator, self.driver) if r is not None}

    # --- reconcile --------------------------------------------------------------------------------

    def reconcile(self) -> bool:
        """One pass of the operator and the driver's release; True when anything was written."""
        wanted: dict[str, Obj] = {}
        wrote = False
        wrote |= self._label_nodes()
        for obj in self._operands(self.operator_output()):
            wanted[self._key(obj)] = obj
        driver = self.driver_output()
        if driver is not None and not driver.error and self.driver is not None:
            for obj in self._driver_objects(self.driver, driver):
                wanted[self._key(obj)] = obj
        for key, obj in wanted.items():
            if self._applied.get(key) != obj:
                self._ensure_namespace(obj)
                try:
                    self.client.apply(obj["kind"], obj, _MANAGER)
                except ApiError as exc:
                    if exc.status != 403 or "being terminated" not in exc.message:
                        raise
                    continue  # as a Helm upgrade into a namespace being deleted fails: tried again next pass
                self._applied[key] = obj
                wrote = True
        for key in [k for k in self._applied if k not in wanted]:
            kind, namespace, name = key.split("/", 2)
            self.client.delete(kind, name, namespace)
            del self._applied[key]
            wrote = True
        return wrote

    @staticmethod
    def _key(obj: Obj) -> str:
        return f"{obj['kind']}/{obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}"

    def _ensure_namespace(self, obj: Obj) -> None:
        namespace = obj["metadata"].get("namespace")
        if namespace and self.client.get("Namespace", namespace) is None:
            try:
                self.client.create(
                    "Namespace", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
                )
            except ApiError as exc:
                if exc.status != 409:
                    raise

    def _label_nodes(self) -> bool:
        """`labelGPUNodes`: gpu.present and every absent deploy label on NVIDIA nodes."""
        wrote = False
        for node in self.client.list("Node"):
            labels = node["metadata"].get("labels") or {}
            if (
                labels.get(NFD_NVIDIA_PCI_LABEL) != "true"
                or labels.get(DEPLOY_LABEL_PREFIX + "operands") == "false"
            ):
                continue
            capable = labels.get(MIG_CAPABLE_LABEL) == "true" or mig_capable(
                labels.get(GPU_PRODUCT_LABEL, "")
            )
            names = STATE_LABELS + (("mig-manager",) if capable else ())
            patch = {DEPLOY_LABEL_PREFIX + n: "true" for n in names if DEPLOY_LABEL_PREFIX + n not in labels}
            if labels.get(GPU_PRESENT_LABEL) != "true":
                patch[GPU_PRESENT_LABEL] = "true"
            if patch:
                self.client.patch("Node", node["metadata"]["name"], {"metadata": {"labels": patch}})
                wrote = True
        return wrote

    def _operands(self, out: OperatorOutput) -> list[Obj]:
        objects = []
        for operand in out.operands:
            if operand == "device-plugin" and not out.device_plugin:
                continue
            name, labels = OPERAND_DAEMONSETS[operand]
            container: Obj = {"name": name, "image": f"nvcr.io/nvidia/{operand}:rehearsal"}
            if operand == "dcgm-exporter" and out.exporter_dra:
                container["env"] = [{"name": DCGM_EXPORTER_DRA_ENV, "value": "true"}]
            pod_labels = (
                _OPERAND_LABELS.get(operand, {}) | labels | {"app.kubernetes.io/part-of": "gpu-operator"}
            )
            spec = {
                "nodeSelector": {DEPLOY_LABEL_PREFIX + operand: "true"},
                "tolerations": [dict(t) for t in out.operand_tolerations],
            }
            daemonset = _daemonset(name, self.operator_namespace, pod_labels, spec, [container])
            daemonset["spec"]["updateStrategy"] = _update_strategy(operand, out)
            objects.append(daemonset)
        return objects

    def _driver_objects(self, release: ReleaseSpec, out: DraDriverOutput) -> list[Obj]:
        chart = chart_facts("dra-driver", release.version)[0].chart
        resources = (release.values.get("resources") or {}) if isinstance(release.values, dict) else {}
        enabled = [
            name
            for key, name in (("gpus", "gpus"), ("computeDomains", "compute-domains"))
            if (resources.get(key) or {}).get("enabled", True)
        ] or ["gpus"]
        spec: dict[str, Any] = {"tolerations": [dict(t) for t in out.tolerations]}
        if out.node_selector:
            spec["nodeSelector"] = dict(out.node_selector)
        if out.affinity:
            spec["affinity"] = {
                "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": out.affinity}
            }
        containers = [
            {"name": n, "image": "registry.k8s.io/dra-driver-nvidia-gpu:rehearsal"} for n in enabled
        ]
        objects = [
            _daemonset(
                f"{chart}{DRA_KUBELET_PLUGIN_SUFFIX}",
                self.driver_namespace,
                {f"{chart}-component": "kubelet-plugin"},
                spec,
                containers,
            )
        ]
        for name, class_spec in sorted(out.classes.items()):
            objects.append(
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "DeviceClass",
                    "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "Helm"}},
                    "spec": class_spec,
                }
            )
        return objects


@lru_cache(maxsize=16)
def _operator(version: str, values: str) -> OperatorOutput:
    """The operator chart's model for `values` (JSON): every pass of the agents asks for it, and it
    changes only when an engine or the runbook upgrades the release."""
    return render_gpu_operator(version, json.loads(values))
