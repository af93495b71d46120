"""The model's cluster as `gpuplatform snapshot` would read it, in memory or written to a folder.

Nodes, operand and plugin pods come from `snapshot_nodes`; here the cluster-wide objects: the DRA
driver's controller (only where the chart renders its Deployment for the installed values,
`charts/facts.py` `renders`), the workloads with their generated ResourceClaims (the claim
`<pod>-<request>-<suffix>`, owned by its pod, allocated on the pod's node and reserved for it, as the
resourceclaim controller and the scheduler leave it; kubernetes `pkg/controller/resourceclaim`), the
validation probes as their Job renders them with the `nvidia-smi -L` line of the device they hold in
their log, the gate Jobs' pods with the proof they printed, DeviceClasses, ResourceClaimTemplates and
Jobs. DaemonSets, ReplicaSets and the engines' objects (CRDs, controllers, `argocd-cm`) are not
modelled: the manifest lists them as missing.

A model node group stands for identical nodes: `every_node=False` shows one node per group (what the
gates judge in the replay, see `gate_verdict.py`), `every_node=True` every node (what is written).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gpuplatform.charts.facts import chart_facts
from gpuplatform.errors import InputError
from gpuplatform.gates.matchers import DRA_DRIVER
from gpuplatform.inventory.catalog import lookup_product
from gpuplatform.kueue.simulate import kueue_objects
from gpuplatform.labels import GATE_LABEL, GPU_RESOURCE
from gpuplatform.output.write import write_file
from gpuplatform.simulate.controllers import cron_job_name, owner_references, suffix
from gpuplatform.simulate.model import Group, Workload
from gpuplatform.simulate.scheduler import bridge_class
from gpuplatform.simulate.snapshot_nodes import device_list, dra_chart_name, node_objects, pod_object
from gpuplatform.simulate.world import World
from gpuplatform.snapshot.read import KINDS, Snapshot

__all__ = ["NOT_MODELLED", "cluster_snapshot", "probe_pod", "write_snapshot"]

#: Kinds the model does not hold: left out of a written snapshot and listed as missing.
NOT_MODELLED = (
    "daemonsets",
    "replicasets",
    "customresourcedefinitions",
    "deployments",
    "configmaps",
    "namespaces",
)
_LIVE = {"running": "running", "restarting": "unready", "terminating": "terminating"}
_LIVE["stuck-terminating"] = "terminating"
_JOB_NAME = ("job-name", "batch.kubernetes.io/job-name")


def cluster_snapshot(world: World, *, every_node: bool = True) -> Snapshot:
    """The cluster of `world` as a snapshot (one node per group unless `every_node`)."""
    nodes, pods, slices = [], [], []
    for group in world.cluster.groups:
        for name in group.nodes if every_node else group.nodes[:1]:
            node, on_node, published = node_objects(world, group, name)
            nodes.append(node)
            pods += on_node
            slices += published
    pods += _controller(world)
    workload_pods, claims, logs = _workloads(world, every_node)
    pods += workload_pods
    for key, log in sorted(world.cluster.gate_logs.items()):
        pods.append(_gate_pod(key, log))
        logs[_pod_key(pods[-1])] = log
    kinds: dict[str, list[dict[str, Any]] | None] = {
        "nodes": nodes,
        "pods": pods,
        "jobs": _jobs(world),
        "deviceclasses": _classes(world),
        "resourceslices": slices,
        "resourceclaims": claims,
        "resourceclaimtemplates": _templates(world),
        **kueue_objects(world),
    }
    return Snapshot(Path("<simulated cluster>"), kinds | dict.fromkeys(NOT_MODELLED), logs=logs)


def probe_pod(w: Workload) -> str:
    """The name of a validation probe's pod (its Job's name and a suffix, as the Job controller names it)."""
    return f"{w.name}-{suffix(w.key)}"


def _pod_key(pod: dict[str, Any]) -> str:
    return f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"


def _controller(world: World) -> list[dict[str, Any]]:
    """The DRA driver controller's pod, where the installed release renders its Deployment."""
    release = world.cluster.releases.get("dra-driver")
    if release is None or not release.alive or world.dra() is None:
        return []
    if not chart_facts("dra-driver", release.version)[0].renders("apps", "Deployment", release.values):
        return []
    chart = dra_chart_name(world)
    name = f"{chart}-controller"
    return [
        pod_object(
            f"{name}-{suffix(name)}-{suffix(name, 'pod')}",
            world.plan.platform.dra_driver.namespace,
            "",
            {f"{chart}-component": "controller"},
            ["compute-domains"],
            owners=owner_references("ReplicaSet", f"{name}-{suffix(name)}")[0],
        )
    ]


def _place(
    world: World, group: Group, w: Workload, cursor: dict[str, int], every_node: bool
) -> tuple[str, list[dict[str, Any]]]:
    """The node a placed workload runs on and the devices it holds: the group's devices in order,
    node after node (one node per group: its first)."""
    nodes = group.nodes if every_node else group.nodes[:1]
    start = cursor.get(group.id, 0)
    cursor[group.id] = start + w.gpus
    devices = device_list(world, group, group.nodes[0])
    node = nodes[(start // max(len(devices), 1)) % len(nodes)]
    if node != group.nodes[0]:
        devices = device_list(world, group, node)
    return node, [devices[(start + i) % len(devices)] for i in range(w.gpus)] if devices else []


def _smi(world: World, group: Group, devices: list[dict[str, Any]]) -> str:
    """`nvidia-smi -L` in a container that holds `devices`."""
    pool = next(p for p in world.plan.platform.node_pools if p.name == group.pool)
    product = lookup_product(pool.product).product_name
    return "".join(
        f"GPU {i}: {product} (UUID: {d['attributes']['uuid']['string']})\n" for i, d in enumerate(devices)
    )


def _workloads(
    world: World, every_node: bool
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, str]]:
    """The workload pods, their generated claims, and the probes' logs."""
    pods, claims, logs = [], [], {}
    cursor: dict[str, int] = {}
    groups = {g.id: g for g in world.cluster.groups}
    bridge = bridge_class(world.cluster)
    for w in world.cluster.workloads:
        if w.phase in ("done", "refused"):
            continue
        group = groups[w.group] if w.group and w.phase in _LIVE else None
        node, devices = _place(world, group, w, cursor, every_node) if group else ("", [])
        job = world.cluster.probes.get(w.key)
        key: tuple[Any, ...] = (w.key, w.kind, w.phase, w.allocator, w.gpus, w.template, w.device_class)
        key += (
            repr(w.tolerations),
            node,
            tuple(d["name"] for d in devices),
            bridge if w.allocator == "bridge" else "",
            id(job),
        )
        if key not in _PODS:
            if len(_PODS) > 20000:
                _PODS.clear()
                _JOBS.clear()
            _JOBS[id(job)] = job
            _PODS[key] = _workload(world, w, job, bridge, node, devices, group)
        pod, claim, log = _PODS[key]
        pods.append(pod)
        claims += claim
        if log is not None:
            logs[_pod_key(pod)] = log
    return pods, claims, logs


_Built = tuple[dict[str, Any], list[dict[str, Any]], str | None]
_PODS: dict[tuple[Any, ...], _Built] = {}
_JOBS: dict[int, object] = {}


def _workload(
    world: World,
    w: Workload,
    job: dict[str, Any] | None,
    bridge: str,
    node: str,
    devices: list[dict[str, Any]],
    group: Group | None,
) -> _Built:
    """One workload's pod, its generated claims and (a running probe) its log; built once per state."""
    template = ((job or {}).get("spec") or {}).get("template") or {}
    labels = dict((template.get("metadata") or {}).get("labels") or {})
    if job is not None:
        name = probe_pod(w)
        labels |= dict.fromkeys(_JOB_NAME, w.name)
    else:
        name = w.name
        labels["app"] = w.workload or w.name
    owners, controller_labels = owner_references(w.controller, w.workload) if w.origin == "spec" else ([], {})
    pod = pod_object(
        name, w.namespace, node, labels | controller_labels, ["main"], _LIVE.get(w.phase, "pending"), owners
    )
    pod["spec"]["tolerations"] = [dict(t) for t in w.tolerations]
    entry = str((((template.get("spec") or {}).get("resourceClaims")) or [{"name": "gpu"}])[0]["name"])
    claims = []
    if w.kind == "claim":
        claim_name = f"{name}-{entry}-{suffix(name, 'claim')}"
        pod["spec"]["resourceClaims"] = [{"name": entry, "resourceClaimTemplateName": w.template}]
        pod["spec"]["containers"][0]["resources"] = {"claims": [{"name": entry}]}
        pod["status"]["resourceClaimStatuses"] = [{"name": entry, "resourceClaimName": claim_name}]
        claims.append(_claim(claim_name, pod, w.device_class, w.gpus, node, devices))
    else:
        pod["spec"]["containers"][0]["resources"] = {"limits": {GPU_RESOURCE: str(w.gpus)}}
    if w.allocator == "bridge":
        claim_name = f"{name}-extended-resources-{suffix(name, 'bridge')}"
        pod["status"]["extendedResourceClaimStatus"] = {"resourceClaimName": claim_name}
        claims.append(_claim(claim_name, pod, bridge, w.gpus, node, devices))
    log = (
        _smi(world, group, devices)
        if job is not None and group is not None and w.phase == "running"
        else None
    )
    return pod, claims, log


def _claim(
    name: str, pod: dict[str, Any], device_class: str, count: int, node: str, devices: list[dict[str, Any]]
) -> dict[str, Any]:
    """A pod's generated claim: allocated on its node and reserved for it once the pod is placed."""
    meta = pod["metadata"]
    claim: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "name": name,
            "namespace": meta["namespace"],
            "uid": f"uid-{meta['namespace']}-{name}",
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                }
            ],
        },
        "spec": {
            "devices": {
                "requests": [{"name": "gpu", "exactly": {"deviceClassName": device_class, "count": count}}]
            }
        },
        "status": {},
    }
    if node:
        results = [
            {"request": "gpu", "driver": DRA_DRIVER, "pool": node, "device": d["name"]} for d in devices
        ]
        term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
        claim["status"] = {
            "allocation": {"devices": {"results": results}, "nodeSelector": {"nodeSelectorTerms": [term]}},
            "reservedFor": [{"resource": "pods", "name": meta["name"], "uid": meta["uid"]}],
        }
    return claim


def _gate_pod(key: str, log: str) -> dict[str, Any]:
    """The finished pod of a gate Job that held (its log is the proof `evidence` reads)."""
    namespace, _, job = key.partition("/")
    gate = log.rstrip("\n").rsplit("\n", 1)[-1].removeprefix("gate ").removesuffix(" holds")
    labels = dict.fromkeys(_JOB_NAME, job) | {GATE_LABEL: gate}
    return pod_object(f"{job}-{suffix(key)}", namespace, "", labels, ["gate"], "succeeded")


def _jobs(world: World) -> list[dict[str, Any]]:
    """The gate and switch Jobs the engines applied, and the Job of each CronJob's run."""
    out = []
    runs = sorted(
        {
            (w.namespace, w.workload)
            for w in world.cluster.workloads
            if w.controller == "CronJob" and w.phase != "done"
        }
    )
    for namespace, cron in runs:
        owner = {"apiVersion": "batch/v1", "kind": "CronJob", "name": cron, "controller": True}
        meta = {"name": cron_job_name(cron), "namespace": namespace, "ownerReferences": [owner]}
        out.append({"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "status": {"active": 1}})
    for key, status in sorted(world.cluster.jobs.items()):
        namespace, _, name = key.partition("/")
        condition = {"complete": "Complete"}.get(status, "Failed" if status.startswith("failed") else "")
        out.append(
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": name, "namespace": namespace},
                "status": {"conditions": [{"type": condition, "status": "True"}]}
                if condition
                else {"active": 1},
            }
        )
    return out


def _classes(world: World) -> list[dict[str, Any]]:
    out = []
    for c in sorted(world.cluster.classes.values(), key=lambda c: c.name):
        spec: dict[str, Any] = {"selectors": [{"cel": {"expression": c.expression}}]}
        if c.extended_resource:
            spec["extendedResourceName"] = c.extended_resource
        out.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "DeviceClass",
                "metadata": {"name": c.name},
                "spec": spec,
            }
        )
    return out


def _templates(world: World) -> list[dict[str, Any]]:
    out = []
    for key, device_class in sorted(world.cluster.templates.items()):
        namespace, _, name = key.partition("/")
        request = {"name": "gpu", "exactly": {"deviceClassName": device_class}}
        out.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaimTemplate",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"spec": {"devices": {"requests": [request]}}},
            }
        )
    return out


def write_snapshot(snapshot: Snapshot, folder: Path, manifest: dict[str, Any]) -> None:
    """Write `snapshot` as `gpuplatform snapshot` lays a folder out (`<kind>.json`, `logs/`,
    `manifest.json` with `manifest`'s fields added); `folder` must not exist yet."""
    try:
        folder.mkdir(parents=True)
    except FileExistsError:
        raise InputError.single(
            str(folder), "", "already exists; --write-snapshots needs a new or empty folder"
        ) from None
    counts: dict[str, str] = {}
    missing = []
    for kind in KINDS:
        items = snapshot.kinds.get(kind)
        if items is None:
            counts[kind] = "missing: not modelled by the simulator"
            missing.append(kind)
            continue
        body = json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=2) + "\n"
        write_file(folder / f"{kind}.json", body.encode())
        counts[kind] = f"{len(items)} object(s)"
    if snapshot.logs:
        (folder / "logs").mkdir()
    for target, text in sorted(snapshot.logs.items()):
        namespace, _, pod = target.partition("/")
        write_file(folder / "logs" / f"{namespace}_{pod}.log", text.encode())
    doc = {"context": "gpuplatform simulate"} | manifest
    doc |= {"kinds": counts, "logs": dict.fromkeys(sorted(snapshot.logs), "ok"), "missing": missing}
    write_file(folder / "manifest.json", (json.dumps(doc, indent=2) + "\n").encode())
