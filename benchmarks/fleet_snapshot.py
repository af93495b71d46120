"""A cluster snapshot of the benchmark fleet at one wave, as `gpuplatform snapshot` would write it.

Run: `FLEET_NODES=2000 python benchmarks/fleet_snapshot.py WAVE DIR [STACK]` (STACK: another
single-platform stack, such as stacks/reference.py; default the fleet). Deterministic and healthy:
nodes carry the wave's mode label; legacy nodes advertise `nvidia.com/gpu` and run the device
plugin; DRA nodes advertise none, run the DRA kubelet plugin and publish the catalog's
ResourceSlices; every GPU node carries the GPU Operator's `nvidia.com/gpu.deploy.<operand>=true`
labels and runs a pod of each operand the fleet's values enable (the MIG manager only where
`nvidia.com/mig.capable=true`, as GPU Operator v26.3.1 labels it: `addGPUStateLabels` and
`hasMIGCapableGPU` in controllers/state_manager.go); the driver's controller runs where the chart renders it (computeDomains); every pod is ready; every workload runs one pod on a node of
its tier's kind (with an allocated ResourceClaim once it has moved); Karpenter pools have two nodes
labelled with their NodePool; the bridge probe Job's pods ran on a legacy node (device plugin) and a
DRA node (bridge claim) and logged the one GPU they saw.

Sizes follow the fleet: every pod has the fields `kubectl get pods -o json` prints for a running
pod (owner, container with arguments, environment, mounts and resources, volumes, tolerations,
conditions, container status; ~3 KiB each, managed fields left out as kubectl leaves them out), so
2,000 nodes give a snapshot of the size `evidence` meets on such a cluster.
"""

from __future__ import annotations

import hashlib
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gpuplatform.gates.matchers import Operand, enabled_operands
from gpuplatform.inventory import lookup_product, slices_for_node
from gpuplatform.inventory.catalog import mig_profiles
from gpuplatform.load.stacks import load_stack
from gpuplatform.plan.waves import WaveState, plan_platform
from gpuplatform.render.helm_values import dra_driver_chart, dra_driver_values
from gpuplatform.render.validation import validation_jobs
from gpuplatform.versions import DCGM_EXPORTER_DRA_ENV

FLEET = Path(__file__).resolve().with_name("fleet.py")
DRA_NAMESPACE = "nvidia-dra-driver-gpu"
_STARTED = "2026-12-01T08:00:00Z"


def _node(name: str, product: str, gpus: int, dra: bool, labels: dict[str, str]) -> dict[str, Any]:
    """A GPU node as the API returns it: GPU Feature Discovery's labels, capacity, conditions, images."""
    resources = {"cpu": "64", "memory": "1056457256Ki", "pods": "110", "ephemeral-storage": "3750157512Ki"}
    gpu = {"nvidia.com/gpu": "0" if dra else str(gpus)}
    return {
        "metadata": {
            "name": name,
            "uid": f"uid-node-{name}",
            "resourceVersion": "4807162",
            "creationTimestamp": _STARTED,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": "p5.48xlarge",
                "topology.kubernetes.io/zone": "us-east-1a",
                "feature.node.kubernetes.io/pci-10de.present": "true",
                "nvidia.com/cuda.driver.major": "580",
                "nvidia.com/cuda.driver.minor": "126",
                "nvidia.com/cuda.runtime.major": "13",
                "nvidia.com/gfd.timestamp": "1764576000",
                "nvidia.com/gpu.compute.major": "9",
                "nvidia.com/gpu.family": "hopper",
                "nvidia.com/gpu.machine": "p5.48xlarge",
                "nvidia.com/gpu.memory": "81559",
                "nvidia.com/gpu.present": "true",
                "nvidia.com/gpu.product": product.replace(" ", "-"),
                "nvidia.com/gpu.count": str(gpus),
                **labels,
            },
            "annotations": {
                "nfd.node.kubernetes.io/feature-labels": "pci-10de.present",
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": {"providerID": f"aws:///us-east-1a/i-{name.encode().hex()[:17]}"},
        "status": {
            "capacity": resources | gpu,
            "allocatable": resources | gpu,
            "addresses": [
                {"type": "InternalIP", "address": "10.0.0.10"},
                {"type": "Hostname", "address": name},
            ],
            "conditions": [
                {
                    "type": kind,
                    "status": "True" if kind == "Ready" else "False",
                    "lastHeartbeatTime": _STARTED,
                    "lastTransitionTime": _STARTED,
                    "reason": f"Kubelet{kind}",
                    "message": f"kubelet reports {kind}",
                }
                for kind in ("MemoryPressure", "DiskPressure", "PIDPressure", "Ready")
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "architecture": "amd64",
                "containerRuntimeVersion": "containerd://2.1.4",
                "kernelVersion": "6.8.0-1021-aws",
                "kubeProxyVersion": "",
                "kubeletVersion": "v1.36.1",
                "operatingSystem": "linux",
                "osImage": "Ubuntu 24.04.3 LTS",
            },
            "images": [
                {
                    "names": [f"nvcr.io/nvidia/{image}@sha256:{'0' * 64}", f"nvcr.io/nvidia/{image}"],
                    "sizeBytes": 500000000,
                }
                for image in (
                    "driver:580.126.20-ubuntu24.04",
                    "k8s/container-toolkit:v1.18.0",
                    "k8s-device-plugin:v0.18.0",
                    "k8s/dcgm-exporter:4.4.1-4.5.0-ubuntu22.04",
                    "gpu-operator:v26.3.0",
                    "cloud-native/k8s-mig-manager:v0.13.0",
                    "k8s-dra-driver-gpu:v25.8.0",
                )
            ],
        },
    }


def _container(image: str, extra: dict[str, Any]) -> dict[str, Any]:
    """A container as the API returns it: arguments, environment, mounts, resources."""
    return {
        "name": "main",
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "args": ["--v=2", "--health-port=8080", "--metrics-port=9400"],
        "env": [
            {
                "name": "NODE_NAME",
                "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}},
            },
            {
                "name": "NAMESPACE",
                "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}},
            },
            {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"},
            {"name": "NVIDIA_DRIVER_ROOT", "value": "/run/nvidia/driver"},
        ],
        "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}, "limits": {"memory": "512Mi"}},
        "securityContext": {"privileged": True},
        "volumeMounts": [
            {"name": "run-nvidia", "mountPath": "/run/nvidia", "mountPropagation": "HostToContainer"},
            {"name": "host-sys", "mountPath": "/sys", "readOnly": True},
            {
                "name": "kube-api-access",
                "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                "readOnly": True,
            },
        ],
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        **extra,
    }


def _pod(name: str, namespace: str, node: str, **extra: Any) -> dict[str, Any]:
    uid = f"uid-{namespace}-{name}"
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": uid,
        "resourceVersion": "4807162",
        "creationTimestamp": _STARTED,
        "labels": extra.pop("labels", {}),
        "annotations": {"kubectl.kubernetes.io/default-container": "main"},
    }
    if "owners" in extra:
        meta["ownerReferences"] = [
            {"apiVersion": "apps/v1", "uid": f"uid-owner-{o['name']}", "blockOwnerDeletion": True, **o}
            for o in extra.pop("owners")
        ]
    image = "nvcr.io/nvidia/cloud-native/k8s-device-plugin:v0.18.0"
    spec = {
        "nodeName": node,
        "containers": [_container(image, extra.pop("container", {}))],
        "dnsPolicy": "ClusterFirst",
        "enableServiceLinks": True,
        "priority": 2000001000,
        "priorityClassName": "system-node-critical",
        "restartPolicy": "Always",
        "schedulerName": "default-scheduler",
        "serviceAccountName": "default",
        "terminationGracePeriodSeconds": 30,
        "tolerations": [
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
        ],
        "volumes": [
            {"name": "run-nvidia", "hostPath": {"path": "/run/nvidia", "type": "Directory"}},
            {"name": "host-sys", "hostPath": {"path": "/sys", "type": ""}},
            {
                "name": "kube-api-access",
                "projected": {
                    "defaultMode": 420,
                    "sources": [{"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}],
                },
            },
        ],
    }
    conditions = [
        {"type": kind, "status": "True", "lastProbeTime": None, "lastTransitionTime": _STARTED}
        for kind in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")
    ]
    status = {
        "phase": "Running",
        "conditions": conditions,
        "containerStatuses": [
            {
                "name": "main",
                "ready": True,
                "started": True,
                "restartCount": 0,
                "image": image,
                "imageID": f"{image.split(':')[0]}@sha256:{'0' * 64}",
                "containerID": f"containerd://{hashlib.sha256(uid.encode()).hexdigest()}",
                "lastState": {},
                "state": {"running": {"startedAt": _STARTED}},
            }
        ],
        "hostIP": "10.0.0.10",
        "podIP": "10.1.0.10",
        "qosClass": "Burstable",
        "startTime": _STARTED,
    }
    return {"metadata": meta, "spec": {**spec, **extra}, "status": status}


def _operand_pods(node: str, operands: list[Operand], mig_capable: bool) -> list[dict[str, Any]]:
    """The GPU Operator's operand pods on a GPU node (the MIG manager only on MIG-capable GPUs); the
    DCGM exporter with the env the operator copies from the values gpuplatform renders (DRA mode)."""
    pods = []
    for o in operands:
        if o.name == "mig-manager" and not mig_capable:
            continue
        pod = _pod(
            f"{o.label[1]}-{node}",
            "gpu-operator",
            node,
            labels={o.label[0]: o.label[1]},
            owners=[{"kind": "DaemonSet", "name": o.label[1], "controller": True}],
        )
        if o.name == "dcgm-exporter":
            pod["spec"]["containers"][0]["env"].append({"name": DCGM_EXPORTER_DRA_ENV, "value": "true"})
        pods.append(pod)
    return pods


def _plugin_pod(node: str, dra: bool) -> dict[str, Any]:
    if dra:
        owner = {"kind": "DaemonSet", "name": "dra-driver-nvidia-gpu-kubelet-plugin", "controller": True}
        return _pod(f"dra-driver-nvidia-gpu-kubelet-plugin-{node}", DRA_NAMESPACE, node, owners=[owner])
    return _pod(
        f"nvidia-device-plugin-daemonset-{node}",
        "gpu-operator",
        node,
        labels={"app": "nvidia-device-plugin-daemonset"},
    )


def _claim(name: str, namespace: str, node: str, device: str, pod: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace},
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "gpu", "driver": "gpu.nvidia.com", "pool": node, "device": device}
                    ]
                }
            },
            "reservedFor": [{"resource": "pods", "name": pod, "uid": f"uid-{namespace}-{pod}"}],
        },
    }


def _bridge_probes(
    data: dict[str, Any] | None, kinds: dict[str, list[dict[str, Any]]], dra: list[str], legacy: list[str]
) -> dict[str, str]:
    """The bridge Job's pods, one per side, and the `nvidia-smi -L` line each logged."""
    logs: dict[str, str] = {}
    uuids = {
        s["spec"]["nodeName"]: s["spec"]["devices"][0]["attributes"]["uuid"]["string"]
        for s in kinds["resourceslices"]
    }
    if data is None:
        return logs
    for side in data["sides"]:
        on_dra = side["side"] == "dra"
        nodes = dra if on_dra else legacy
        if not nodes:
            continue
        node, name, namespace = nodes[0], f"{side['job']}-probe", data["namespace"]
        limits = {"resources": {"limits": {"nvidia.com/gpu": "1"}}}
        pod = _pod(name, namespace, node, labels={"job-name": side["job"]}, container=limits)
        uuid = f"GPU-legacy-{node}-0"
        if on_dra:
            claim = f"{name}-gpu"
            pod["status"]["extendedResourceClaimStatus"] = {"resourceClaimName": claim}
            kinds["resourceclaims"].append(_claim(claim, namespace, node, "gpu-0", name))
            uuid = uuids[node]
        kinds["pods"].append(pod)
        logs[f"{namespace}/{name}"] = f"GPU 0: probe (UUID: {uuid})\n"
    return logs


def build(wave: str, stack: Path = FLEET) -> tuple[dict[str, list[dict[str, Any]]], dict[str, str]]:
    """Items per snapshot kind for the fleet at `wave`, and the pod logs."""
    loaded = load_stack(stack)[0]  # the stack's own platform, without its overlays
    platform = loaded.platform
    plan = plan_platform(platform)
    state: WaveState = plan.wave(wave)
    kinds: dict[str, list[dict[str, Any]]] = {
        k: []
        for k in ("nodes", "pods", "daemonsets", "replicasets", "jobs", "resourceslices", "resourceclaims")
    }
    classes = [*state.tiers, *state.bridges]
    kinds["deviceclasses"] = [{"metadata": {"name": platform.class_name(c)}} for c in classes]
    if state.driver_installed and dra_driver_chart(platform).renders(
        "apps", "Deployment", dra_driver_values(plan)
    ):
        # the chart renders its controller Deployment only with resources.computeDomains.enabled
        controller = {
            "app.kubernetes.io/name": "dra-driver-nvidia-gpu",
            "nvidia-dra-driver-gpu-component": "controller",
        }
        kinds["pods"].append(
            _pod("dra-driver-nvidia-gpu-controller-0", DRA_NAMESPACE, "control-plane", labels=controller)
        )
    kinds["resourceclaimtemplates"] = []
    dra_nodes: dict[str, list[str]] = {}
    legacy_nodes: list[str] = []
    operands = enabled_operands(platform.gpu_operator.values)
    for pool in platform.node_pools:
        dra = state.pool_modes[pool.name] == "dra"
        product = lookup_product(pool.product).product_name
        mig_capable = bool(mig_profiles(pool.product))
        labels = {platform.mode_label_key: state.pool_modes[pool.name]}
        labels["nvidia.com/mig.capable"] = str(mig_capable).lower()
        labels |= {o.deploy_label: "true" for o in operands if o.name != "mig-manager" or mig_capable}
        names = list(pool.nodes)
        if pool.provisioner is not None:
            labels["karpenter.sh/nodepool"] = pool.provisioner.name
            names = [f"{pool.provisioner.name}-{i}" for i in range(2)]
        for name in names:
            kinds["nodes"].append(_node(name, product, pool.gpus_per_node, dra, labels))
            kinds["pods"].append(_plugin_pod(name, dra))
            kinds["pods"] += _operand_pods(name, operands, mig_capable)
            if dra:
                slices = slices_for_node(
                    name, pool.product, pool.gpus_per_node, mig_layout=pool.mig_layout or None
                )
                kinds["resourceslices"] += slices
                dra_nodes.setdefault(pool.name, []).append(name)
            else:
                legacy_nodes.append(name)
    placed = [n for names in dra_nodes.values() for n in names]
    for i, workload in enumerate(platform.workloads):
        moved = workload.name in {platform.workloads[j].name for j in state.workloads}
        if moved and placed:
            node = placed[i % len(placed)]
            claim = f"{workload.name}-gpu-{i:05d}"
            kinds["pods"].append(
                _pod(f"{workload.name}-{i:05d}", workload.namespace, node, resourceClaims=[{"name": "gpu"}])
            )
            kinds["resourceclaims"].append(
                _claim(claim, workload.namespace, node, "gpu-0", f"{workload.name}-{i:05d}")
            )
        elif legacy_nodes:
            node = legacy_nodes[i % len(legacy_nodes)]
            limits = {"resources": {"limits": {"nvidia.com/gpu": str(workload.gpus)}}}
            kinds["pods"].append(_pod(f"{workload.name}-{i:05d}", workload.namespace, node, container=limits))
    logs = _bridge_probes(validation_jobs(plan, state).data["bridge"], kinds, placed, legacy_nodes)
    return kinds, logs


def write(wave: str, folder: Path, stack: Path = FLEET) -> Path:
    """Write the snapshot folder (one `<kind>.json` per kind and `manifest.json`)."""
    folder.mkdir(parents=True, exist_ok=True)
    kinds, logs = build(wave, stack)
    for kind, items in kinds.items():
        (folder / f"{kind}.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    (folder / "logs").mkdir(exist_ok=True)
    for target, text in logs.items():
        namespace, _, pod = target.partition("/")
        (folder / "logs" / f"{namespace}_{pod}.log").write_text(text)
    manifest = {
        "context": "fleet",
        "serverVersion": "v1.36.1",
        "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "missing": [],
        "kinds": {kind: f"{len(items)} object(s)" for kind, items in kinds.items()},
    }
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


if __name__ == "__main__":
    write(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]) if len(sys.argv) > 3 else FLEET)
