"""Deterministic cluster snapshots of a platform in one wave: healthy by default, broken on request.

`build(platform, wave)` lays out every pool the way the cluster would show it — static pools by
name, Karpenter and node-group pools as nodes carrying their provisioner's label — with the
allocators, operands, ResourceSlices, validation pods and their logs a healthy cluster has.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gpuplatform.gates.matchers import enabled_operands
from gpuplatform.gates.nodes import pool_selector
from gpuplatform.inventory.catalog import lookup_product, slices_for_node
from gpuplatform.load.stacks import load_stack
from gpuplatform.model.nodes import NodePool
from gpuplatform.model.platform import Platform
from gpuplatform.plan.waves import Plan, WaveState, plan_platform
from gpuplatform.render.gate_facts import device_classes
from gpuplatform.render.helm_values import (
    dra_driver_chart,
    dra_driver_values,
    merge_values,
    operator_settings,
)
from gpuplatform.render.nodes import node_labels
from gpuplatform.render.validation import validation_jobs

REPO = Path(__file__).resolve().parents[2]
OPERATOR_NS = "gpu-operator"
MIG_CAPABLE = ("A100", "H100", "H200")


def ready(*containers: str) -> list[dict[str, Any]]:
    return [{"name": c, "ready": True} for c in containers]


def node(
    name: str,
    *,
    gpus: str | None = None,
    product: str = "NVIDIA-H100-80GB-HBM3",
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    allocatable = {"cpu": "64"} | ({"nvidia.com/gpu": gpus} if gpus is not None else {})
    return {
        "metadata": {
            "name": name,
            "labels": {"nvidia.com/gpu.product": product, "nvidia.com/gpu.count": "8", **(labels or {})},
        },
        "status": {"allocatable": allocatable},
    }


def pod(
    name: str,
    namespace: str,
    node_name: str,
    *,
    labels: dict[str, str] | None = None,
    owners: list[dict[str, Any]] | None = None,
    gpus: int = 0,
    phase: str = "Running",
    uid: str | None = None,
    containers: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": "busybox"}
    if gpus:
        container["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}}
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": uid or f"uid-{namespace}-{name}",
        "labels": labels or {},
    }
    if owners:
        meta["ownerReferences"] = owners
    status: dict[str, Any] = {"phase": phase}
    if phase == "Running":
        status["containerStatuses"] = containers if containers is not None else ready("main")
    return {
        "metadata": meta,
        "spec": {"nodeName": node_name, "containers": [container], **spec},
        "status": status,
    }


def device_plugin_pod(node_name: str) -> dict[str, Any]:
    return pod(
        f"nvidia-device-plugin-daemonset-{node_name}",
        OPERATOR_NS,
        node_name,
        labels={"app": "nvidia-device-plugin-daemonset"},
        containers=ready("nvidia-device-plugin"),
    )


def kubelet_plugin_pod(node_name: str, namespace: str = "nvidia-dra-driver-gpu") -> dict[str, Any]:
    owner = {"kind": "DaemonSet", "name": "dra-driver-nvidia-gpu-kubelet-plugin", "controller": True}
    return pod(
        f"dra-driver-nvidia-gpu-kubelet-plugin-{node_name}",
        namespace,
        node_name,
        owners=[owner],
        labels={"dra-driver-nvidia-gpu-component": "kubelet-plugin"},
        containers=ready("gpus", "compute-domains"),
    )


def claim(
    name: str,
    namespace: str,
    node_name: str,
    device: str = "gpu-0",
    reserved_uid: str | None = None,
    owner: dict[str, Any] | None = None,
) -> dict[str, Any]:
    status: dict[str, Any] = {
        "allocation": {
            "devices": {
                "results": [
                    {"request": "gpu", "driver": "gpu.nvidia.com", "pool": node_name, "device": device}
                ]
            }
        }
    }
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if reserved_uid is not None:
        status["reservedFor"] = [{"resource": "pods", "name": f"pod-of-{name}", "uid": reserved_uid}]
    if owner is not None:
        meta["ownerReferences"] = [{"kind": "Pod", "controller": True, **owner}]
    return {"metadata": meta, "status": status}


def smi_line(index: int, product: str, uuid: str) -> str:
    return f"GPU {index}: {product} (UUID: {uuid})\n"


@dataclass
class Cluster:
    """A cluster as kubectl would show it, plus the logs `snapshot` keeps."""

    kinds: dict[str, list[dict[str, Any]] | None] = field(default_factory=dict)
    nvidia_smi: dict[str, str] = field(default_factory=dict)
    logs: dict[str, str] = field(default_factory=dict)

    @classmethod
    def healthy(cls) -> Cluster:
        """The reference platform in its native-claim-pilot wave, with a legacy trainer."""
        cluster = build(reference_platform(), "native-claim-pilot")
        trainer = pod(
            "trainer-7d4f9-x2x",
            "ml",
            "gpu-legacy-01",
            gpus=2,
            labels={"pod-template-hash": "7d4f9"},
            owners=[{"kind": "ReplicaSet", "name": "trainer-7d4f9", "controller": True}],
        )
        cluster.list("pods").append(trainer)
        cluster.list("replicasets").append(
            {
                "metadata": {
                    "name": "trainer-7d4f9",
                    "namespace": "ml",
                    "ownerReferences": [{"kind": "Deployment", "name": "trainer", "controller": True}],
                }
            }
        )
        return cluster

    def list(self, kind: str) -> list[dict[str, Any]]:
        items = self.kinds[kind]
        assert items is not None
        return items

    def named(self, kind: str, name: str) -> dict[str, Any]:
        return next(o for o in self.list(kind) if o["metadata"]["name"] == name)

    def pods_on(self, node_name: str) -> list[dict[str, Any]]:
        return [p for p in self.list("pods") if p["spec"].get("nodeName") == node_name]

    def write(self, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        for kind, items in self.kinds.items():
            if items is not None:
                (folder / f"{kind}.json").write_text(
                    json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=2)
                )
        missing = [k for k, v in self.kinds.items() if v is None]
        manifest = {
            "context": "test",
            "serverVersion": "v1.36.1",
            "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "missing": missing,
            "kinds": {k: f"{len(v)} object(s)" for k, v in self.kinds.items() if v is not None},
        }
        (folder / "manifest.json").write_text(json.dumps(manifest))
        for sub, texts, suffix in (("nvidia-smi", self.nvidia_smi, "csv"), ("logs", self.logs, "log")):
            if texts:
                (folder / sub).mkdir(exist_ok=True)
            for target, text in texts.items():
                ns, _, name = target.partition("/")
                (folder / sub / f"{ns}_{name}.{suffix}").write_text(text)
        return folder


def reference_platform() -> Platform:
    return load_stack(REPO / "stacks" / "reference.py")[0].platform


def pool_node_names(pool: NodePool, provisioned: int) -> list[str]:
    return list(pool.nodes) or [f"{pool.name}-node-{i}" for i in range(provisioned)]


def _node_of(platform: Platform, pool: NodePool, name: str, mode: str) -> dict[str, Any]:
    product = lookup_product(pool.product)
    labels = dict(node_labels(platform, pool, mode))  # type: ignore[arg-type]
    labels |= dict(pool_selector(pool).labels)
    deploy = ["driver", "container-toolkit", "gpu-feature-discovery", "dcgm", "dcgm-exporter"]
    if any(p in product.key for p in MIG_CAPABLE):
        deploy.append("mig-manager")
    labels |= {f"nvidia.com/gpu.deploy.{d}": "true" for d in deploy}
    labels["nvidia.com/gpu.deploy.device-plugin"] = "false" if mode == "dra" else "true"
    return node(
        name,
        gpus=str(pool.gpus_per_node) if mode == "legacy" else None,
        product=product.product_name.replace(" ", "-"),
        labels=labels,
    )


def _operand_pods(platform: Platform, node_obj: dict[str, Any]) -> list[dict[str, Any]]:
    name = node_obj["metadata"]["name"]
    labels = node_obj["metadata"]["labels"]
    pods = [
        pod(
            f"{o.name}-{name}",
            platform.gpu_operator.namespace,
            name,
            labels={o.label[0]: o.label[1]},
            containers=ready(o.name),
        )
        for o in enabled_operands(platform.gpu_operator.values)
        if labels.get(o.deploy_label) == "true"
    ]
    # the operator copies `dcgmExporter.env` of the values it runs with onto the exporter's container
    # (NVIDIA/gpu-operator v26.3.1 controllers/object_controls.go)
    values = merge_values(platform.gpu_operator.values, operator_settings(platform))
    env = (values.get("dcgmExporter") or {}).get("env") or []
    for p in pods:
        if p["metadata"]["labels"] == {"app": "nvidia-dcgm-exporter"}:
            p["spec"]["containers"] = [{"name": "nvidia-dcgm-exporter", "image": "dcgm-exporter", "env": env}]
    return pods


def _uuid(slices: list[dict[str, Any]], device: str) -> str:
    return next(
        d["attributes"]["uuid"]["string"] for s in slices for d in s["spec"]["devices"] if d["name"] == device
    )


def build(platform: Platform, wave: str, provisioned: int = 2) -> Cluster:
    """A healthy snapshot of `platform` in `wave` (provisioner pools get `provisioned` nodes each)."""
    plan = plan_platform(platform)
    state = plan.wave(wave)
    cluster = Cluster(
        kinds={
            k: []
            for k in (
                "nodes",
                "pods",
                "daemonsets",
                "replicasets",
                "jobs",
                "deviceclasses",
                "resourceslices",
                "resourceclaims",
                "resourceclaimtemplates",
            )
        }
    )
    slices: dict[str, list[dict[str, Any]]] = {}
    for pool in platform.node_pools:
        mode = state.pool_modes[pool.name]
        for name in pool_node_names(pool, provisioned):
            node_obj = _node_of(platform, pool, name, mode)
            cluster.list("nodes").append(node_obj)
            if mode == "legacy":
                cluster.list("pods").append(device_plugin_pod(name))
                continue
            if not state.driver_installed:
                continue
            cluster.list("pods").append(kubelet_plugin_pod(name, platform.dra_driver.namespace))
            cluster.list("pods").extend(_operand_pods(platform, node_obj))
            slices[name] = slices_for_node(
                name,
                pool.product,
                pool.gpus_per_node,
                driver_release=platform.dra_driver.chart_version,
                mig_layout=pool.mig_layout or None,
            )
            cluster.list("resourceslices").extend(slices[name])
    if state.driver_installed and dra_driver_chart(platform).renders(
        "apps", "Deployment", dra_driver_values(plan)
    ):
        # the chart renders its controller Deployment only with resources.computeDomains.enabled
        cluster.list("pods").append(
            pod(
                "dra-driver-nvidia-gpu-controller-6f7d9-abcde",
                platform.dra_driver.namespace,
                "control-plane-01",
                labels={"dra-driver-nvidia-gpu-component": "controller"},
                containers=ready("compute-domains"),
            )
        )
    cluster.list("deviceclasses").extend({"metadata": {"name": c}} for c in device_classes(plan, state))
    _validation(plan, state, cluster, slices)
    return cluster


def _dra_nodes(plan: Plan, state: WaveState, provisioned: int = 2) -> list[tuple[NodePool, str]]:
    return [
        (pool, name)
        for pool in plan.platform.node_pools
        if state.pool_modes[pool.name] == "dra"
        for name in pool_node_names(pool, provisioned)
    ]


def _validation(
    plan: Plan, state: WaveState, cluster: Cluster, slices: dict[str, list[dict[str, Any]]]
) -> None:
    data = validation_jobs(plan, state).data
    dra = _dra_nodes(plan, state)
    if data["validation"] is not None and dra:
        v = data["validation"]
        pool, where = dra[0]
        name = f"{v['job']}-abcde"
        claim_name = f"{name}-gpu-x1"
        validation = pod(
            name,
            v["namespace"],
            where,
            labels={"job-name": v["job"], "gpuplatform.dev/validation": "claim-pilot"},
            resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "hopper-large-gpu"}],
        )
        validation["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": claim_name}]
        cluster.list("pods").append(validation)
        cluster.list("resourceclaims").append(
            claim(claim_name, v["namespace"], where, reserved_uid=validation["metadata"]["uid"])
        )
        product = lookup_product(pool.product).product_name
        cluster.logs[f"{v['namespace']}/{name}"] = smi_line(0, product, _uuid(slices[where], "gpu-0"))
    if data["bridge"] is None:
        return
    b = data["bridge"]
    legacy = [
        (pool, name)
        for pool in plan.platform.node_pools
        if state.pool_modes[pool.name] == "legacy"
        for name in pool_node_names(pool, 2)
    ]
    for side in b["sides"]:
        pool, where = (dra if side["side"] == "dra" else legacy)[0]
        name = f"{side['job']}-fghij"
        bridge = pod(
            name,
            b["namespace"],
            where,
            labels={"job-name": side["job"], "gpuplatform.dev/validation": f"bridge-{side['side']}"},
            gpus=1,
        )
        product = lookup_product(pool.product).product_name
        uuid = f"GPU-legacy-{where}-3"
        if side["side"] == "dra":
            claim_name = f"{name}-gpu-y2"
            bridge["status"]["extendedResourceClaimStatus"] = {"resourceClaimName": claim_name}
            cluster.list("resourceclaims").append(
                claim(claim_name, b["namespace"], where, "gpu-1", reserved_uid=bridge["metadata"]["uid"])
            )
            uuid = _uuid(slices[where], "gpu-1")
        cluster.list("pods").append(bridge)
        cluster.logs[f"{b['namespace']}/{name}"] = smi_line(0, product, uuid)
