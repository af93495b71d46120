"""A cluster snapshot of the benchmark fleet at one wave, as `gpuplatform snapshot` would write it.

Run: `FLEET_NODES=2000 python benchmarks/fleet_snapshot.py WAVE DIR [STACK]` (STACK: another
single-platform stack, such as stacks/reference.py; default the fleet). The cluster is the
simulator's, the one healthy cluster of the wave (`gpuplatform.simulate.wave_cluster`): every node of
every pool (a provisioner pool with its `minNodes`), the operands and the allocator each runs, the
ResourceSlices, the workloads with their claims, the validation probes with their logs, the gate
Jobs' pods, written as `simulate --write-snapshots` writes its checkpoints. The model holds only
the fields the gates read; here each node and pod also gets the fields `kubectl get -o json` prints
that the model leaves out (GPU Feature Discovery's other labels, addresses, conditions, images; a
container's arguments, environment, mounts and requests, volumes, conditions, container status:
~3 KiB a pod, managed fields left out as kubectl leaves them out), so 2,000 nodes give a snapshot
of the size `evidence` meets on such a cluster. The fields added never change what a gate reads:
no GPU resource, no device-plugin socket, no toleration or environment the model's object sets.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gpuplatform.load.stacks import load_stack
from gpuplatform.plan.waves import plan_platform
from gpuplatform.simulate.snapshot import cluster_snapshot, write_snapshot
from gpuplatform.simulate.wave_cluster import wave_world
from gpuplatform.snapshot.manifest import TIME_FORMAT
from gpuplatform.snapshot.read import Snapshot

FLEET = Path(__file__).resolve().with_name("fleet.py")
_STARTED = "2026-12-01T08:00:00Z"
_IMAGE = "nvcr.io/nvidia/cloud-native/k8s-device-plugin:v0.18.0"
#: Node labels of GPU Feature Discovery and the cloud the model does not hold (none a gate reads).
_NODE_LABELS = {
    "node.kubernetes.io/instance-type": "p5.48xlarge",
    "topology.kubernetes.io/zone": "us-east-1a",
    "nvidia.com/cuda.driver.major": "580",
    "nvidia.com/cuda.driver.minor": "126",
    "nvidia.com/cuda.runtime.major": "13",
    "nvidia.com/gfd.timestamp": "1764576000",
    "nvidia.com/gpu.machine": "p5.48xlarge",
}


def _node(model: dict[str, Any]) -> dict[str, Any]:
    """The model's Node with the fields the API adds: annotations, provider, addresses, conditions, images
    (a new object, sharing the model's own fields)."""
    meta = model["metadata"]
    name = meta["name"]
    node = dict(model)
    node["metadata"] = {
        **meta,
        "resourceVersion": "4807162",
        "creationTimestamp": _STARTED,
        "labels": _NODE_LABELS | meta["labels"],
        "annotations": {
            "nfd.node.kubernetes.io/feature-labels": "pci-10de.present",
            "node.alpha.kubernetes.io/ttl": "0",
            "volumes.kubernetes.io/controller-managed-attach-detach": "true",
        },
    }
    node["spec"] = {"providerID": f"aws:///us-east-1a/i-{name.encode().hex()[:17]}", **model["spec"]}
    node["status"] = model["status"] | {
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
    }
    return node


def _container(model: dict[str, Any]) -> dict[str, Any]:
    """The model's container with the fields the API adds: image, arguments, environment, mounts,
    requests (the model's resources and environment kept)."""
    resources = model.get("resources") or {}
    return {
        "name": model["name"],
        "image": _IMAGE,
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
            {"name": "NVIDIA_DRIVER_ROOT", "value": "/run/nvidia/driver"},
            *(model.get("env") or []),
        ],
        "resources": {
            **resources,
            "requests": {"cpu": "10m", "memory": "64Mi", **(resources.get("requests") or {})},
            "limits": {"memory": "512Mi", **(resources.get("limits") or {})},
        },
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
    }


def _pod(model: dict[str, Any]) -> dict[str, Any]:
    """The model's Pod with the fields the API adds (its own labels, owners, claims, tolerations,
    environment, resources and readiness kept; a new object, sharing the model's own fields)."""
    meta = model["metadata"]
    uid = meta["uid"]
    containers = model["spec"]["containers"]
    pod = dict(model)
    pod["metadata"] = {
        **meta,
        "resourceVersion": "4807162",
        "creationTimestamp": _STARTED,
        "annotations": {"kubectl.kubernetes.io/default-container": containers[0]["name"]},
    }
    if "ownerReferences" in meta:
        pod["metadata"]["ownerReferences"] = [
            {"uid": f"uid-owner-{o['name']}", "blockOwnerDeletion": True, **o}
            for o in meta["ownerReferences"]
        ]
    pod["spec"] = {
        "dnsPolicy": "ClusterFirst",
        "enableServiceLinks": True,
        "restartPolicy": "Always",
        "schedulerName": "default-scheduler",
        "serviceAccountName": "default",
        "terminationGracePeriodSeconds": 30,
        "tolerations": [
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
        **model["spec"],
        "containers": [_container(c) for c in containers],
    }
    if model["status"]["phase"] != "Running":
        return pod
    status = pod["status"] = dict(model["status"])
    ready = all(c["ready"] for c in status.get("containerStatuses") or [])
    status["conditions"] = [
        {
            "type": kind,
            "status": str(ready or kind not in ("Ready", "ContainersReady")),
            "lastProbeTime": None,
        }
        | {"lastTransitionTime": _STARTED}
        for kind in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")
    ]
    status["containerStatuses"] = [
        {
            "restartCount": 0,
            "image": _IMAGE,
            "imageID": f"{_IMAGE.split(':')[0]}@sha256:{'0' * 64}",
            "containerID": f"containerd://{hashlib.sha256((uid + c['name']).encode()).hexdigest()}",
            "lastState": {},
            "state": {"running": {"startedAt": _STARTED}},
            **c,
        }
        for c in status.get("containerStatuses") or []
    ]
    status |= {"hostIP": "10.0.0.10", "podIP": "10.1.0.10", "qosClass": "Burstable", "startTime": _STARTED}
    return pod


def _snapshot(wave: str, stack: Path) -> Snapshot:
    """The model's cluster of the stack's platform at `wave`, nodes and pods as the API serves them
    (sharing objects with the model, which never edits them)."""
    loaded = load_stack(stack)[0]  # the stack's own platform, without its overlays
    snapshot = cluster_snapshot(wave_world(plan_platform(loaded.platform), wave))
    kinds = snapshot.kinds | {
        "nodes": [_node(n) for n in snapshot.kinds["nodes"] or []],
        "pods": [_pod(p) for p in snapshot.kinds["pods"] or []],
    }
    return Snapshot(snapshot.folder, kinds, logs=snapshot.logs)


def build(wave: str, stack: Path = FLEET) -> tuple[dict[str, list[dict[str, Any]]], dict[str, str]]:
    """Items per kind the model holds for the stack's platform at `wave` (nodes and pods as the API
    serves them), and the pod logs: copies, to break at will."""
    snapshot = _snapshot(wave, stack)
    kinds = {k: v for k, v in snapshot.kinds.items() if v is not None}
    return json.loads(json.dumps(kinds)), dict(snapshot.logs)


def write(wave: str, folder: Path, stack: Path = FLEET) -> Path:
    """Write the snapshot folder as `simulate --write-snapshots` does (`folder` must not exist yet)."""
    snapshot = _snapshot(wave, stack)
    now = datetime.now(UTC).strftime(TIME_FORMAT)
    write_snapshot(snapshot, folder, {"context": "fleet", "serverVersion": "v1.36.1", "time": now})
    return folder


def write_apart(wave: str, folder: Path, stack: Path = FLEET) -> Path:
    """`write` in a child process: the model's objects and caches stay out of the caller, whose
    memory a benchmarked child would otherwise count in its peak RSS (it is still the caller's when
    the child execs, `harness.run`)."""
    subprocess.run([sys.executable, __file__, wave, str(folder), str(stack)], check=True)
    return folder


if __name__ == "__main__":
    write(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]) if len(sys.argv) > 3 else FLEET)
