"""Safe and unsafe clusters of every pool kind, judged by the gate Job's script and offline alike.

Each scenario takes a healthy snapshot of the mixed fleet (a static A100 pool, a Karpenter L40S
pool, an EKS node-group H100 pool) or of the reference platform, breaks one thing, and expects one
gate to say so. The same scenario runs the gate Job's script under dash with a fake kubectl and
real jq (exit 0 held, exit 3 not held within the attempt) and the offline evaluator; both must
agree. The cases of issue 10's "Why" are marked `why-N`.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gpuplatform.gates import gates_for_wave
from gpuplatform.model.platform import Platform
from gpuplatform.plan.waves import plan_platform
from gpuplatform.testing import (
    OPERATOR_NAMESPACE,
    Cluster,
    claim,
    device_plugin_pod,
    kubelet_plugin_pod,
    pod,
    wave_cluster,
)
from tests.gates import api_shapes as api
from tests.gates.harness import fleet_doc, in_cluster, load_platform, offline
from tests.specs import reference_platform

pytestmark = pytest.mark.skipif(
    shutil.which("jq") is None or shutil.which("dash") is None, reason="the gate scripts need dash and jq"
)

Mutation = Callable[[Cluster], None]


@dataclass(frozen=True)
class Case:
    wave: str
    gate: str
    status: str
    finding: str
    mutate: Mutation
    doc: Callable[[], dict[str, Any]] = fleet_doc


def _nodes_of(pool_label: str) -> Callable[[Cluster], list[dict[str, Any]]]:
    def select(cluster: Cluster) -> list[dict[str, Any]]:
        key, _, value = pool_label.partition("=")
        return [n for n in cluster.list("nodes") if n["metadata"]["labels"].get(key) == value]

    return select


#: The container toolkit's DaemonSet (gpu-operator v26.3.1 `assets/state-container-toolkit/`).
TOOLKIT = "nvidia-container-toolkit-daemonset"
KARPENTER = _nodes_of("karpenter.sh/nodepool=gpu-l40s")
EKS = _nodes_of("eks.amazonaws.com/nodegroup=h100-ng")


def _both_allocators(nodes: Callable[[Cluster], list[dict[str, Any]]]) -> Mutation:
    def mutate(cluster: Cluster) -> None:
        for n in nodes(cluster):
            cluster.list("pods").append(device_plugin_pod(n["metadata"]["name"]))
            n["status"]["allocatable"]["nvidia.com/gpu"] = "4"

    return mutate


def _claim_on_first(nodes: Callable[[Cluster], list[dict[str, Any]]]) -> Mutation:
    def mutate(cluster: Cluster) -> None:
        name = nodes(cluster)[0]["metadata"]["name"]
        cluster.list("resourceclaims").append(claim("still-there", "team", name, reserved_uid="uid-x"))

    return mutate


def _drop_nodes(nodes: Callable[[Cluster], list[dict[str, Any]]]) -> Mutation:
    def mutate(cluster: Cluster) -> None:
        gone = {n["metadata"]["name"] for n in nodes(cluster)}
        cluster.kinds["nodes"] = [n for n in cluster.list("nodes") if n["metadata"]["name"] not in gone]

    return mutate


def _slice_of(cluster: Cluster, node: str) -> dict[str, Any]:
    return next(s for s in cluster.list("resourceslices") if s["spec"]["nodeName"] == node)


def _first(nodes: Callable[[Cluster], list[dict[str, Any]]], cluster: Cluster) -> str:
    return str(nodes(cluster)[0]["metadata"]["name"])


def _empty_slice(cluster: Cluster) -> None:
    _slice_of(cluster, _first(KARPENTER, cluster))["spec"]["devices"] = []


def _memory(value: str) -> Mutation:
    def mutate(cluster: Cluster) -> None:
        for device in _slice_of(cluster, _first(EKS, cluster))["spec"]["devices"]:
            device["capacity"]["memory"]["value"] = value

    return mutate


def _allocatable(resource: str) -> Mutation:
    def mutate(cluster: Cluster) -> None:
        KARPENTER(cluster)[0]["status"]["allocatable"][resource] = "7"

    return mutate


def _legacy_publishes(cluster: Cluster) -> None:
    legacy = "a100-01"
    cluster.list("resourceslices").append(
        {
            "metadata": {"name": f"{legacy}-gpu.nvidia.com-x"},
            "spec": {
                "driver": "gpu.nvidia.com",
                "nodeName": legacy,
                "pool": {"name": legacy},
                "devices": [{"name": "gpu-0"}],
            },
        }
    )


def _legacy_runs_kubelet_plugin(cluster: Cluster) -> None:
    cluster.list("pods").append(kubelet_plugin_pod("a100-02"))


def _plugin_not_ready(cluster: Cluster) -> None:
    for p in cluster.pods_on(_first(KARPENTER, cluster)):
        if "kubelet-plugin" in p["metadata"]["name"]:
            p["status"]["containerStatuses"] = [
                {"name": "gpus", "ready": False},
                {"name": "compute-domains", "ready": True},
            ]


def _toolkit_waiting(cluster: Cluster) -> None:
    (toolkit,) = [
        p for p in cluster.pods_on(_first(EKS, cluster)) if p["metadata"]["name"].startswith(TOOLKIT)
    ]
    toolkit["status"]["containerStatuses"] = [{"name": TOOLKIT, "ready": False}]


def _controller_gone(cluster: Cluster) -> None:
    cluster.kinds["pods"] = [p for p in cluster.list("pods") if "controller" not in p["metadata"]["name"]]


def _validation(cluster: Cluster) -> dict[str, Any]:
    return next(
        p
        for p in cluster.list("pods")
        if p["metadata"]["labels"].get("gpuplatform.dev/validation") == "claim-pilot"
    )


def _validation_done(cluster: Cluster) -> None:
    """The old Job: `nvidia-smi -L` and exit; the controller deleted the claim of the done pod."""
    v = _validation(cluster)
    v["status"] = {"phase": "Succeeded"}
    cluster.kinds["resourceclaims"] = [
        c for c in cluster.list("resourceclaims") if c["metadata"]["namespace"] != "pilot"
    ]


def _validation_saw_other_gpu(cluster: Cluster) -> None:
    v = _validation(cluster)
    cluster.logs[f"pilot/{v['metadata']['name']}"] = "GPU 0: NVIDIA L40S (UUID: GPU-not-the-claimed-one)\n"


def _validation_not_printed(cluster: Cluster) -> None:
    v = _validation(cluster)
    cluster.logs[f"pilot/{v['metadata']['name']}"] = ""


def _bridge_pod(cluster: Cluster, side: str) -> dict[str, Any]:
    return next(
        p
        for p in cluster.list("pods")
        if p["metadata"]["labels"].get("gpuplatform.dev/validation") == f"bridge-{side}"
    )


def _bridge_two_gpus(cluster: Cluster) -> None:
    p = _bridge_pod(cluster, "dra")
    key = f"{p['metadata']['namespace']}/{p['metadata']['name']}"
    cluster.logs[key] += "GPU 1: NVIDIA L40S (UUID: GPU-extra)\n"


def _bridge_legacy_via_dra(cluster: Cluster) -> None:
    _bridge_pod(cluster, "legacy")["status"]["extendedResourceClaimStatus"] = {"resourceClaimName": "x"}


def _sees_gpus(
    nodes: Callable[[Cluster], list[dict[str, Any]]],
    value: str,
    *,
    gpus: int = 0,
    owner: str = "",
    init: bool = False,
    namespace: str = "team",
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> Mutation:
    """A pod of `namespace` on the first of `nodes` whose container sets NVIDIA_VISIBLE_DEVICES to
    `value`; with `owner`, made by the DaemonSet of that name (as its controller sets the reference)."""

    def mutate(cluster: Cluster) -> None:
        owners = (
            [
                {
                    "apiVersion": "apps/v1",
                    "kind": "DaemonSet",
                    "name": owner,
                    "uid": "uid-ds",
                    "controller": True,
                }
            ]
            if owner
            else None
        )
        sees = pod("sees", namespace, _first(nodes, cluster), gpus=gpus, owners=owners, labels=labels, **spec)
        env = [{"name": "LANG", "value": "C"}, {"name": "NVIDIA_VISIBLE_DEVICES", "value": value}]
        if init:
            sees["spec"]["initContainers"] = [{"name": "warm", "image": "busybox", "env": env}]
        else:
            sees["spec"]["containers"][0]["env"] = env
        cluster.list("pods").append(sees)

    return mutate


def _stand_in_for_the_device_plugin(node: str) -> Mutation:
    """The operator's device plugin on `node` crash-loops; a ready tenant pod carries its label."""

    def mutate(cluster: Cluster) -> None:
        for p in cluster.list("pods"):
            if (
                p["spec"].get("nodeName") == node
                and p["metadata"]["labels"].get("app") == "nvidia-device-plugin-daemonset"
            ):
                p["status"]["containerStatuses"] = [{"name": "plugin", "ready": False}]
        labels = {"app": "nvidia-device-plugin-daemonset"}
        cluster.list("pods").append(pod("stand-in", "team", node, labels=labels))

    return mutate


def LEGACY(cluster: Cluster) -> list[dict[str, Any]]:
    """The static legacy pool's nodes."""
    return [n for n in cluster.list("nodes") if n["metadata"]["name"].startswith("a100-")]


def _terminating_claim_pod(cluster: Cluster) -> None:
    node = _first(KARPENTER, cluster)
    holder = pod("trainer-0", "team", node, resourceClaims=[{"name": "gpu", "resourceClaimName": "c"}])
    holder["metadata"]["deletionTimestamp"] = "2026-12-02T00:00:00Z"
    cluster.list("pods").append(holder)


def _stray_dra_node_with_both(cluster: Cluster) -> None:
    stray = {
        "metadata": {"name": "stray-01", "labels": {"gpu-scheduling.fleet.example.com/mode": "dra"}},
        "status": {"allocatable": {"nvidia.com/gpu": "8"}},
    }
    cluster.list("nodes").append(stray)
    cluster.list("pods").extend([device_plugin_pod("stray-01"), kubelet_plugin_pod("stray-01")])


def _eks_node_keeps_legacy_label(cluster: Cluster) -> None:
    EKS(cluster)[0]["metadata"]["labels"]["gpu-scheduling.fleet.example.com/mode"] = "legacy"


def _missing_kind(kind: str) -> Mutation:
    def mutate(cluster: Cluster) -> None:
        cluster.kinds[kind] = None

    return mutate


def _nothing(cluster: Cluster) -> None:
    return None


def mig_fleet() -> dict[str, Any]:
    """The fleet with its H100 node group partitioned into two 3g.40gb MIG devices per GPU."""
    doc = fleet_doc()
    doc["spec"]["nodePools"][2]["migLayout"] = ["3g.40gb", "3g.40gb"]
    doc["spec"]["tiers"][1] = {"name": "hopper", "deviceType": "mig", "migProfile": "3g.40gb"}
    return doc


def _mig_profile(profile: str) -> Mutation:
    def mutate(cluster: Cluster) -> None:
        device = _slice_of(cluster, _first(EKS, cluster))["spec"]["devices"][0]
        device["attributes"]["profile"] = {"string": profile}

    return mutate


def _compute_domains_on() -> dict[str, Any]:
    """The fleet with ComputeDomains on: only then does the DRA chart render its controller."""
    doc = fleet_doc()
    doc["spec"]["draDriver"]["computeDomains"] = True
    return doc


CASES: dict[str, Case] = {
    # allocator-exclusivity, both ways and for every device-plugin resource
    "why-1 karpenter nodes run both allocators": Case(
        "claims", "allocator-exclusivity", "broken", "TWO ALLOCATORS", _both_allocators(KARPENTER)
    ),
    "node-group nodes run both allocators": Case(
        "app", "allocator-exclusivity", "broken", "TWO ALLOCATORS", _both_allocators(EKS)
    ),
    "why-4 mig resource on a DRA node": Case(
        "claims",
        "allocator-exclusivity",
        "broken",
        "advertises nvidia.com/mig-1g.10gb=7",
        _allocatable("nvidia.com/mig-1g.10gb"),
    ),
    "why-4 time-sliced renamed resource": Case(
        "claims",
        "allocator-exclusivity",
        "broken",
        "advertises nvidia.com/gpu.shared=7",
        _allocatable("nvidia.com/gpu.shared"),
    ),
    "why-4 legacy node publishes DRA devices": Case(
        "claims",
        "allocator-exclusivity",
        "broken",
        "legacy node a100-01 publishes gpu.nvidia.com devices",
        _legacy_publishes,
    ),
    "why-4 legacy node runs the kubelet plugin": Case(
        "claims",
        "allocator-exclusivity",
        "broken",
        "legacy node a100-02 runs DRA kubelet plugin",
        _legacy_runs_kubelet_plugin,
    ),
    "why-4 kubelet plugin running but not ready": Case(
        "claims",
        "allocator-exclusivity",
        "broken",
        "is not ready (containers not ready: gpus)",
        _plugin_not_ready,
    ),
    "stray node labelled dra with both allocators": Case(
        "claims",
        "allocator-exclusivity",
        "broken",
        "node stray-01 has TWO ALLOCATORS",
        _stray_dra_node_with_both,
    ),
    "node-group node not relabelled by its provisioner": Case(
        "app",
        "allocator-exclusivity",
        "broken",
        "is DRA in this wave but carries gpu-scheduling.fleet.example.com/mode=legacy",
        _eks_node_keeps_legacy_label,
    ),
    "why-1 karpenter pool has no node found": Case(
        "claims",
        "allocator-exclusivity",
        "unknown",
        "pool l40s must have at least 1 node(s)",
        _drop_nodes(KARPENTER),
    ),
    "static node missing": Case(
        "claims",
        "allocator-exclusivity",
        "unknown",
        "node(s) a100-02 not in the cluster",
        lambda c: c.kinds.__setitem__(
            "nodes", [n for n in c.list("nodes") if n["metadata"]["name"] != "a100-02"]
        ),
    ),
    "nodes unreadable": Case(
        "claims", "allocator-exclusivity", "unknown", "nodes could not be read", _missing_kind("nodes")
    ),
    "healthy fleet exclusivity": Case("app", "allocator-exclusivity", "held", "", _nothing),
    # allocator-exclusivity on the API's real shapes (issue 26, item 4)
    "slice reaches legacy nodes by nodeSelector on their mode label": Case(
        "claims",
        "allocator-exclusivity",
        "broken",
        "node a100-01 has TWO ALLOCATORS",
        api.publish(
            nodeSelector=api.selector(
                {"matchExpressions": [{"key": api.MODE, "operator": "In", "values": ["legacy"]}]}
            )
        ),
    ),
    "slice reaches a legacy node by matchFields metadata.name": Case(
        "claims",
        "allocator-exclusivity",
        "broken",
        "legacy node a100-02 publishes gpu.nvidia.com devices",
        api.publish(
            nodeSelector=api.selector(
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a100-02"]}]}
            )
        ),
    ),
    "slice reaches a legacy node by Gt on a label, terms ORed": Case(
        "claims",
        "allocator-exclusivity",
        "broken",
        "legacy node a100-02 publishes gpu.nvidia.com devices",
        api.label_node(
            "a100-02",
            "example.com/rack",
            "12",
            api.publish(
                nodeSelector=api.selector(
                    {"matchExpressions": [{"key": "example.com/rack", "operator": "Lt", "values": ["12"]}]},
                    {
                        "matchExpressions": [
                            {"key": "example.com/rack", "operator": "Gt", "values": ["9"]},
                            {"key": "example.com/rack", "operator": "NotIn", "values": ["13"]},
                            {"key": "example.com/row", "operator": "DoesNotExist"},
                            {"key": api.MODE, "operator": "Exists"},
                        ]
                    },
                )
            ),
        ),
    ),
    "slice selector ANDs its expressions and misses the legacy nodes": Case(
        "claims",
        "allocator-exclusivity",
        "held",
        "",
        api.publish(
            nodeSelector=api.selector(
                {
                    "matchExpressions": [
                        {"key": api.MODE, "operator": "In", "values": ["legacy"]},
                        {"key": "karpenter.sh/nodepool", "operator": "Exists"},
                    ]
                },
                {"matchExpressions": [{"key": "example.com/rack", "operator": "Gt", "values": ["x"]}]},
                {},
            )
        ),
    ),
    "slice published to allNodes reaches the legacy nodes": Case(
        "claims",
        "allocator-exclusivity",
        "broken",
        "node a100-01 has TWO ALLOCATORS: the device plugin (nvidia.com/gpu=8, "
        f"gpu-operator/{device_plugin_pod('a100-01')['metadata']['name']}) and the DRA driver (ResourceSlice devices)",
        api.publish(allNodes=True),
    ),
    "a device of a partitioned slice reaches a legacy node by its own nodeName": Case(
        "claims",
        "allocator-exclusivity",
        "broken",
        "legacy node a100-02 publishes gpu.nvidia.com devices",
        api.per_device(nodeName="a100-02"),
    ),
    "a device of a partitioned slice reaches legacy nodes by its own selector": Case(
        "claims",
        "allocator-exclusivity",
        "broken",
        "legacy node a100-01 publishes gpu.nvidia.com devices",
        api.per_device(
            nodeSelector=api.selector(
                {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["a100-02"]}]}
            )
        ),
    ),
    "DRA node without status is unknown, not proof": Case(
        "claims",
        "allocator-exclusivity",
        "unknown",
        "reports no status.allocatable",
        api.strip_status(KARPENTER, None),
    ),
    "DRA node whose status has no allocatable is unknown": Case(
        "claims",
        "allocator-exclusivity",
        "unknown",
        "reports no status.allocatable",
        api.strip_status(KARPENTER, {"capacity": {"cpu": "64"}}),
    ),
    "standalone device plugin on a DRA node": Case(
        "claims",
        "allocator-exclusivity",
        "broken",
        "runs device-plugin pod kube-system/nvidia-device-plugin-ds-",
        api.add_pod(KARPENTER, api.standalone_plugin_pod),
    ),
    "standalone device plugin from a mirror by digest": Case(
        "claims",
        "allocator-exclusivity",
        "broken",
        "TWO ALLOCATORS",
        api.add_pod(
            KARPENTER,
            lambda n: api.standalone_plugin_pod(
                n, "registry.example.com:5000/nvidia/k8s-device-plugin@sha256:0a1b"
            ),
        ),
    ),
    "standalone device plugin serves a legacy node": Case(
        "claims", "allocator-exclusivity", "held", "", api.replace_operator_plugin("a100-01")
    ),
    "feature discovery runs the plugin's image and is no device plugin": Case(
        "claims", "allocator-exclusivity", "held", "", api.add_pod(KARPENTER, api.gfd_pod)
    ),
    # allocator-exclusivity: a third allocator (NVIDIA_VISIBLE_DEVICES, no request, no claim)
    "third allocator sees all GPUs of a DRA node": Case(
        "claims",
        "allocator-exclusivity",
        "broken",
        "pod team/sees on DRA node",
        _sees_gpus(KARPENTER, "all"),
    ),
    "third allocator sees GPUs of a legacy node by UUID": Case(
        "claims",
        "allocator-exclusivity",
        "broken",
        "reaches GPUs through NVIDIA_VISIBLE_DEVICES=GPU-1a2b,GPU-3c4d with no allocator",
        _sees_gpus(LEGACY, "GPU-1a2b,GPU-3c4d"),
    ),
    "third allocator sees GPUs by index from an init container": Case(
        "app",
        "allocator-exclusivity",
        "broken",
        "NVIDIA_VISIBLE_DEVICES=0,1 ",
        _sees_gpus(EKS, "0,1", init=True),
    ),
    "third allocator owned by a DaemonSet outside the GPU stack": Case(
        "claims",
        "allocator-exclusivity",
        "broken",
        "a third allocator",
        _sees_gpus(KARPENTER, "ALL", owner="metrics"),
    ),
    "visible devices with a GPU request is the device plugin's": Case(
        "claims", "allocator-exclusivity", "held", "", _sees_gpus(LEGACY, "all", gpus=1)
    ),
    "visible devices with a resource claim is the DRA driver's": Case(
        "claims",
        "allocator-exclusivity",
        "held",
        "",
        _sees_gpus(
            KARPENTER, "all", resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "one-ada"}]
        ),
    ),
    "visible devices none shows no GPU": Case(
        "claims", "allocator-exclusivity", "held", "", _sees_gpus(KARPENTER, "None")
    ),
    "visible devices void shows no GPU": Case(
        "claims", "allocator-exclusivity", "held", "", _sees_gpus(LEGACY, "void")
    ),
    "the GPU stack's own pods see every GPU by design": Case(
        "claims",
        "allocator-exclusivity",
        "held",
        "",
        _sees_gpus(KARPENTER, "all", owner="nvidia-dcgm-exporter", namespace=OPERATOR_NAMESPACE),
    ),
    "the DRA driver's own pods see every GPU by design": Case(
        "claims",
        "allocator-exclusivity",
        "held",
        "",
        _sees_gpus(
            KARPENTER, "all", owner="dra-driver-nvidia-gpu-kubelet-plugin", namespace="nvidia-dra-driver-gpu"
        ),
    ),
    # issue 39 H3: a tenant's pod is never the GPU stack, whatever its labels and owners
    "a tenant pod labelled as the device plugin is a third allocator": Case(
        "claims",
        "allocator-exclusivity",
        "broken",
        "pod team/sees on legacy node a100-01 reaches GPUs through NVIDIA_VISIBLE_DEVICES=all",
        _sees_gpus(LEGACY, "all", labels={"app": "nvidia-device-plugin-daemonset"}),
    ),
    "a tenant's DaemonSet named like the GPU stack's is a third allocator": Case(
        "claims",
        "allocator-exclusivity",
        "broken",
        "pod team/sees on legacy node a100-01 reaches GPUs through NVIDIA_VISIBLE_DEVICES=all",
        _sees_gpus(LEGACY, "all", owner="nvidia-tools"),
    ),
    "a stack-named pod the DaemonSet controller did not make is a third allocator": Case(
        "claims",
        "allocator-exclusivity",
        "broken",
        "a third allocator",
        _sees_gpus(
            LEGACY, "all", namespace=OPERATOR_NAMESPACE, labels={"app": "nvidia-device-plugin-daemonset"}
        ),
    ),
    "a tenant pod labelled as the device plugin does not stand in for a crashed one": Case(
        "claims",
        "allocator-exclusivity",
        "broken",
        "legacy node a100-01 has no ready device-plugin pod of a DaemonSet in gpu-operator",
        _stand_in_for_the_device_plugin("a100-01"),
    ),
    "a standalone device plugin outside the operator's namespace serves no legacy node": Case(
        "claims",
        "allocator-exclusivity",
        "broken",
        "legacy node a100-01 has no ready device-plugin pod of a DaemonSet in gpu-operator",
        api.replace_operator_plugin("a100-01", namespace="kube-system"),
    ),
    "a finished pod that saw every GPU holds none": Case(
        "claims", "allocator-exclusivity", "held", "", _sees_gpus(KARPENTER, "all", phase="Succeeded")
    ),
    # inventory per device
    "why-3 empty ResourceSlice": Case(
        "claims", "inventory", "broken", "publishes 0 gpu device(s), pool l40s declares 4", _empty_slice
    ),
    "why-3 memory is the marketing figure": Case(
        "app",
        "inventory",
        "broken",
        "publishes memory 80Gi; the catalog's figure is 81559Mi (±0.2%)",
        _memory("80Gi"),
    ),
    "memory within the known variance": Case("app", "inventory", "held", "", _memory("81600Mi")),
    "node-group pool has no node found": Case(
        "app", "inventory", "unknown", "pool h100 must have at least 1 node(s)", _drop_nodes(EKS)
    ),
    "healthy fleet inventory": Case("app", "inventory", "held", "", _nothing),
    "healthy MIG node group": Case("app", "inventory", "held", "", _nothing, mig_fleet),
    "MIG device of a profile outside the layout": Case(
        "app",
        "inventory",
        "broken",
        "is MIG profile 1g.10gb, not in pool h100's layout",
        _mig_profile("1g.10gb"),
        mig_fleet,
    ),
    # operands
    "toolkit waiting for the validator's marker": Case(
        "app", "operands", "broken", f"container-toolkit pod gpu-operator/{TOOLKIT}-", _toolkit_waiting
    ),
    "driver controller gone": Case(
        "claims",
        "operands",
        "broken",
        "the DRA driver controller runs no pod",
        _controller_gone,
        _compute_domains_on,
    ),
    "healthy fleet operands": Case("app", "operands", "held", "", _nothing),
    # rollback-safety
    "why-1 rollback with a claim on a karpenter node": Case(
        "base",
        "rollback-safety",
        "broken",
        "is allocated on node l40s-node-0, and this wave has no DRA driver",
        _claim_on_first(KARPENTER),
    ),
    "claim on a node-group node the wave declares legacy": Case(
        "claims", "rollback-safety", "broken", "which this wave does not declare DRA", _claim_on_first(EKS)
    ),
    "why-7 pod with a claim terminating on a node leaving DRA": Case(
        "base",
        "rollback-safety",
        "broken",
        "pod team/trainer-0 with a resource claim is still terminating on node l40s-node-0",
        _terminating_claim_pod,
    ),
    "claim on a DRA karpenter node is allowed": Case(
        "claims", "rollback-safety", "held", "", _claim_on_first(KARPENTER)
    ),
    # claim-pilot
    "why-2 validation pod done, claim deleted": Case(
        "claims", "claim-pilot", "unknown", "is Succeeded, not holding its claim", _validation_done
    ),
    "container saw another GPU": Case(
        "claims", "claim-pilot", "broken", "saw GPU-not-the-claimed-one", _validation_saw_other_gpu
    ),
    "container printed nothing yet": Case(
        "claims", "claim-pilot", "unknown", "has printed no nvidia-smi -L line yet", _validation_not_printed
    ),
    "healthy claim pilot": Case("claims", "claim-pilot", "held", "", _nothing),
    # bridge
    "bridge pod on the DRA side sees two GPUs": Case(
        "bridge", "bridge", "broken", "requested one nvidia.com/gpu and saw 2 GPUs", _bridge_two_gpus
    ),
    "legacy bridge pod served by DRA": Case(
        "bridge", "bridge", "broken", "was served by the DRA bridge", _bridge_legacy_via_dra
    ),
    "healthy bridge": Case("bridge", "bridge", "held", "", _nothing),
}


def _platform(tmp_path: Path, case: Case) -> Platform:
    return load_platform(tmp_path, case.doc())


def build_again(platform: Platform, case: Case) -> Cluster:
    cluster = wave_cluster(platform, case.wave)
    case.mutate(cluster)
    return cluster


@pytest.mark.parametrize("name", sorted(CASES))
def test_both_judges_agree(tmp_path: Path, name: str) -> None:
    # GIVEN a healthy snapshot of the fleet in the case's wave, broken the case's way
    case = CASES[name]
    platform = _platform(tmp_path, case)
    cluster = wave_cluster(platform, case.wave)
    case.mutate(cluster)
    # WHEN the offline evaluator and the gate Job's script judge it
    result = offline(platform, case.wave, case.gate, cluster, tmp_path / "offline")
    run = in_cluster(platform, case.wave, case.gate, build_again(platform, case), tmp_path / "cluster")
    # THEN both say the same, and say why
    assert result.status == case.status, (result.findings, result.unknowns)
    assert run.returncode == (0 if case.status == "held" else 3), run.stdout + run.stderr
    if case.finding:
        said = result.findings if case.status == "broken" else result.unknowns
        assert any(case.finding in line for line in said), said
        assert case.finding in run.stderr
    else:
        assert result.proof and "holds" in run.stdout


def test_claim_pilot_removes_the_pod_and_proves_the_release(tmp_path: Path) -> None:
    # GIVEN a healthy pilot
    platform = load_platform(tmp_path, fleet_doc())
    # WHEN the gate Job runs
    run = in_cluster(platform, "claims", "claim-pilot", wave_cluster(platform, "claims"), tmp_path / "c")
    # THEN it removed the validation pod, and proved the claim released
    assert run.returncode == 0, run.stderr
    calls = (tmp_path / "c" / "calls.log").read_text()
    assert "delete pod -n pilot gpu-dra-validation-" in calls
    assert (
        "proof: claim pilot/gpu-dra-validation-" in run.stdout
        and "released after its pod was removed" in run.stdout
    )


def test_a_claim_that_stays_allocated_fails_the_job(tmp_path: Path) -> None:
    platform = load_platform(tmp_path, fleet_doc())
    run = in_cluster(
        platform, "claims", "claim-pilot", wave_cluster(platform, "claims"), tmp_path / "c", stuck=True
    )
    assert run.returncode == 1
    assert "is still allocated 300 s after its pod was removed" in run.stderr


def test_a_broken_pilot_keeps_its_pod(tmp_path: Path) -> None:
    platform = load_platform(tmp_path, fleet_doc())
    cluster = wave_cluster(platform, "claims")
    _validation_saw_other_gpu(cluster)
    run = in_cluster(platform, "claims", "claim-pilot", cluster, tmp_path / "c")
    assert run.returncode == 3
    assert "delete" not in (tmp_path / "c" / "calls.log").read_text()


def test_a_static_pool_reference_cluster_holds_every_gate_of_every_wave(tmp_path: Path) -> None:
    platform = reference_platform()
    plan = plan_platform(platform)
    for state in plan.waves:
        for gate in gates_for_wave(plan, state):
            folder = tmp_path / f"{state.name}-{gate.id}"
            run = in_cluster(platform, state.name, gate.id, wave_cluster(platform, state.name), folder)
            assert run.returncode == 0, (state.name, gate.id, run.stderr)
