"""The emulated kubelet of every GPU node, with its two allocator plugins; only what needs a GPU.

Followed from the model `simulate` cites (simulate/kubelet.py, simulate/operator.py):

- Registration: the Node with its labels, capacity, Ready, and the kubelet endpoint the apiserver
  proxies `kubectl logs` to (this module serves `/containerLogs`).
- Pods bound to a node: admitted (extended resources against allocatable, claims allocated on this
  node and prepared by a running DRA kubelet plugin; a pod whose claims cannot be prepared waits in
  ContainerCreating), then Running. The product's Jobs (gates, switch, probes) run their rendered
  command (`runtime.py`); every other pod runs until deleted. A deleted pod is stopped and removed
  (grace 0, as the kubelet confirms); one whose claims need a DRA kubelet plugin that is gone stays
  Terminating (kubernetes/kubernetes#129402).
- Device plugin (pkg/kubelet/cm/devicemanager/manager.go): while the operator's device plugin pod
  runs, `allocatable` holds what it advertises (`inventory/device_plugin.advertised`: the MIG strategy);
  when it stops, those resources drop to 0 at once and running pods keep their GPUs.
- DRA kubelet plugin (pkg/kubelet/cm/dra): while the driver's kubelet plugin pod runs, the node's
  ResourceSlices are published (`inventory.slices_for_node`, as driver `gpu.nvidia.com` publishes
  them); after it stops the kubelet wipes them only after `WIPE_DELAY` (virtual) seconds.
"""

from __future__ import annotations

import http.server
import json
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from gpuplatform.errors import InputError
from gpuplatform.gates.matchers import (
    DRA_DRIVER,
    DRA_KUBELET_PLUGIN_SUFFIX,
    OPERAND_DAEMONSETS,
    VISIBLE_DEVICES,
)
from gpuplatform.inventory.catalog import lookup_product, slices_for_node
from gpuplatform.inventory.device_plugin import advertised
from gpuplatform.rehearse.client import ApiError, Client, Obj
from gpuplatform.rehearse.clock import Clock
from gpuplatform.rehearse.fleet import FleetNode, node_manifest
from gpuplatform.rehearse.pods import PodLauncher

__all__ = ["WIPE_DELAY", "Agents", "Allocators"]

#: kubernetes/kubernetes pkg/kubelet/cm/dra/manager.go (1.34-1.36): a plugin that unregisters gets
#: its ResourceSlices wiped after `defaultWipingDelay`, in case it comes back.
WIPE_DELAY = 30.0
_DEVICE_PLUGIN_DS = OPERAND_DAEMONSETS["device-plugin"][0]
_NOW = "2026-01-01T00:00:00Z"


@dataclass
class Allocators:
    """Where each allocator's plugins come from: the namespaces the spec gives, and what is installed."""

    operator_namespace: str
    driver_namespace: str
    mig_strategy: Callable[[], str]
    """The operator's `mig.strategy` now (the device plugin's MIG_STRATEGY)."""
    driver_release: Callable[[], str]
    """The installed DRA driver chart version ('' when none): the slices it publishes."""


@dataclass
class _NodeState:
    advertised: dict[str, int] = field(default_factory=dict)
    """Device-plugin resources registered now (empty: no plugin)."""
    wipe_at: float | None = None
    prepared: dict[str, list[str]] = field(default_factory=dict)
    """Claim uid -> devices the kubelet plugin prepared."""
    assigned: dict[str, list[int]] = field(default_factory=dict)
    """Pod uid -> GPU indexes the device plugin allocated."""


def _owner(pod: Obj) -> tuple[str, str]:
    for ref in pod["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return str(ref.get("kind", "")), str(ref.get("name", ""))
    return "", ""


def _running(pod: Obj) -> bool:
    return pod.get("status", {}).get("phase") == "Running" and not pod["metadata"].get("deletionTimestamp")


def _pending(pod: Obj) -> bool:
    return pod.get("status", {}).get("phase", "Pending") == "Pending" and not pod["metadata"].get(
        "deletionTimestamp"
    )


def _finished(job: Obj) -> bool:
    return any(
        c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
        for c in (job.get("status") or {}).get("conditions") or []
    )


def _daemon_pods_starting(
    sets: list[Obj], nodes: dict[str, Obj], owners: dict[str, list[Obj]], fleet: Iterable[str]
) -> set[str]:
    """`<DaemonSet uid>@<node>`: a fleet node its nodeSelector matches with no live pod of it, or one
    it no longer matches with a pod of it still there."""
    waiting: set[str] = set()
    for ds in sets:
        selector = ((ds.get("spec") or {}).get("template") or {}).get("spec", {}).get("nodeSelector") or {}
        on = {
            str(p["spec"].get("nodeName")) for p in owners.get(ds["metadata"]["uid"], []) if not _terminal(p)
        }
        for name in fleet:
            node = nodes.get(name)
            if node is None or (node.get("spec") or {}).get("unschedulable"):
                continue
            labels = node["metadata"].get("labels") or {}
            if all(labels.get(k) == v for k, v in selector.items()) != (name in on):
                waiting.add(f"{ds['metadata']['uid']}@{name}")
    return waiting


def _terminal(pod: Obj) -> bool:
    return pod.get("status", {}).get("phase") in ("Succeeded", "Failed")


def _gpu_requests(pod: Obj) -> dict[str, int]:
    """`nvidia.com/*` extended resources the pod's containers request (limits, as the kubelet counts them)."""
    out: dict[str, int] = {}
    spec = pod["spec"]
    for container in (spec.get("initContainers") or []) + (spec.get("containers") or []):
        resources = container.get("resources") or {}
        for source in (resources.get("limits") or {}, resources.get("requests") or {}):
            for key, value in source.items():
                if key.startswith("nvidia.com/"):
                    out[key] = max(out.get(key, 0), int(str(value)))
    return out


def _claim_names(pod: Obj) -> list[str]:
    """Names of the ResourceClaims a pod uses: direct, generated from templates, or the scheduler's
    claim for DRA-backed extended resources."""
    status = pod.get("status") or {}
    generated = {s["name"]: s.get("resourceClaimName") for s in status.get("resourceClaimStatuses") or []}
    names = []
    for claim in pod["spec"].get("resourceClaims") or []:
        name = claim.get("resourceClaimName") or generated.get(claim["name"])
        names.append(name or "")
    extended = (status.get("extendedResourceClaimStatus") or {}).get("resourceClaimName")
    if extended:
        names.append(str(extended))
    return names


class Agents:
    """Every node's kubelet, device plugin and DRA kubelet plugin; `reconcile` is one pass over the API."""

    def __init__(
        self,
        client: Client,
        clock: Clock,
        launcher: PodLauncher,
        nodes: Iterable[FleetNode],
        allocators: Allocators,
    ) -> None:
        self.client, self.clock, self.launcher, self.allocators = client, clock, launcher, allocators
        self.fleet: dict[str, FleetNode] = {n.name: n for n in nodes}
        self.state: dict[str, _NodeState] = {n: _NodeState() for n in self.fleet}
        self.started: set[str] = set()
        self.stuck: dict[str, str] = {}
        """Pod key -> why it cannot finish terminating."""
        self.starting: dict[str, float] = {}
        """Uid of a program pod not started yet -> when it was first seen (`about_to_start`)."""
        self.withheld: set[str] = set()
        """Nodes whose running kubelet plugin publishes nothing (a fault a gate must catch)."""
        self.overlaps: dict[str, str] = {}
        """Node -> the first moment it had two allocators, seen by any pass (one that ends between two
        steps of the walk, such as a device plugin back before the kubelet wiped the slices, counts)."""
        self.server = _LogServer(launcher)

    def register(self, node: FleetNode) -> None:
        """A node's kubelet registers it (a new node group's too)."""
        self.fleet[node.name] = node
        self.state.setdefault(node.name, _NodeState())
        manifest = node_manifest(node, self.server.port)
        status = manifest.pop("status")
        try:
            self.client.create("Node", manifest)
        except ApiError as exc:
            if exc.status != 409:
                raise
        self.client.patch("Node", node.name, {"status": status}, status=True)

    def forget(self, name: str) -> None:
        """A node that left the fleet (deleted by its provisioner)."""
        self.fleet.pop(name, None)
        self.state.pop(name, None)

    def published(self, node: str) -> list[Obj]:
        """The ResourceSlices the node's kubelet plugin publishes (the installed driver's release)."""
        spec = self.fleet[node]
        release = self.allocators.driver_release() or "0.4.1"
        layout = spec.mig_layout or None
        try:
            return slices_for_node(node, spec.product, spec.gpus, driver_release=release, mig_layout=layout)
        except InputError:
            return []

    def devices(self, node: str) -> list[dict[str, Any]]:
        """The devices the node's GPUs are, as its ResourceSlices list them."""
        return [d for s in self.published(node) for d in s["spec"]["devices"]]

    # --- one pass ---------------------------------------------------------------------------------

    def reconcile(self) -> bool:
        """Act once on what the API shows; True when anything was written."""
        nodes = {n["metadata"]["name"]: n for n in self.client.list("Node")}
        pods = self.client.list("Pod")
        slices = self.client.list("ResourceSlice")
        claims = {c["metadata"]["uid"]: c for c in self.client.list("ResourceClaim")}
        by_name = {(c["metadata"]["namespace"], c["metadata"]["name"]): c for c in claims.values()}
        wrote = False
        self._note_starting(nodes, pods, self.client.list("Job"), self.client.list("DaemonSet"))
        pods_on: dict[str, list[Obj]] = {}
        for pod in pods:
            pods_on.setdefault(str(pod["spec"].get("nodeName") or ""), []).append(pod)
        slices_of: dict[str, list[Obj]] = {}
        for piece in slices:
            if piece["spec"].get("driver") == DRA_DRIVER:
                slices_of.setdefault(str(piece["spec"].get("nodeName") or ""), []).append(piece)
        strategy = self.allocators.mig_strategy()
        for name in list(self.fleet):
            node = nodes.get(name)
            if node is None:
                continue
            on_node = pods_on.get(name, [])
            wrote |= self._device_plugin(node, on_node, strategy)
            wrote |= self._kubelet_plugin(name, on_node, slices_of.get(name, []))
            for pod in on_node:
                wrote |= self._pod(node, pod, on_node, by_name)
            self._note_overlap(name, slices_of.get(name, []))
        return wrote

    def _note_overlap(self, name: str, mine: list[Obj]) -> None:
        """`mine`: the node's ResourceSlices of the DRA driver."""
        advertised = self.state[name].advertised
        if name in self.overlaps or not advertised:
            return
        if mine:
            resources = ", ".join(f"{k}={v}" for k, v in sorted(advertised.items()))
            self.overlaps[name] = (
                f"node {name}: the device plugin advertised {resources} while {DRA_DRIVER} published its "
                "devices (seen by the node agents, between two steps or at one)"
            )

    def _note_starting(
        self, nodes: dict[str, Obj], pods: list[Obj], jobs: list[Obj], sets: list[Obj]
    ) -> None:
        """What a controller or this kubelet is about to start, with when it was first seen (wall
        time): pods not started yet, program Jobs unfinished with no live pod (the Job controller is
        about to create the next), and DaemonSet pods missing from or left on a fleet node whose
        labels say otherwise (the DaemonSet controller is about to act)."""
        now = time.monotonic()
        waiting = {
            p["metadata"]["uid"]
            for p in pods
            if p["metadata"]["uid"] not in self.started
            and (p.get("status") or {}).get("phase", "Pending") == "Pending"
            and not p["metadata"].get("deletionTimestamp")
        }
        owners: dict[str, list[Obj]] = {}
        for pod in pods:
            for ref in pod["metadata"].get("ownerReferences") or []:
                owners.setdefault(ref.get("uid", ""), []).append(pod)
        waiting |= self._jobs_starting(jobs, owners) | _daemon_pods_starting(sets, nodes, owners, self.fleet)
        self.starting = {key: self.starting.get(key, now) for key in waiting}

    def _jobs_starting(self, jobs: list[Obj], owners: dict[str, list[Obj]]) -> set[str]:
        waiting: set[str] = set()
        for job in jobs:
            meta = job["metadata"]
            if (meta["namespace"], meta["name"]) not in self.launcher.programs or _finished(job):
                continue
            owned = owners.get(meta["uid"], [])
            if not any(_running(p) or _pending(p) for p in owned):
                waiting.add(f"{meta['uid']}#{len(owned)}")  # a new window per attempt
        return waiting

    def about_to_start(self, within: float) -> bool:
        """A program pod appeared less than `within` wall seconds ago and has not started: time waits for it."""
        now = time.monotonic()
        return any(now - seen < within for seen in self.starting.values())

    def _is(self, pod: Obj, namespace: str, match: Callable[[str], bool]) -> bool:
        kind, name = _owner(pod)
        return pod["metadata"]["namespace"] == namespace and kind == "DaemonSet" and match(name)

    def device_plugin_pod(self, pod: Obj) -> bool:
        return self._is(pod, self.allocators.operator_namespace, lambda n: n == _DEVICE_PLUGIN_DS)

    def kubelet_plugin_pod(self, pod: Obj) -> bool:
        return self._is(
            pod, self.allocators.driver_namespace, lambda n: n.endswith(DRA_KUBELET_PLUGIN_SUFFIX)
        )

    def _device_plugin(self, node: Obj, pods: list[Obj], strategy: str) -> bool:
        """`strategy`: the operator's MIG strategy now."""
        name = node["metadata"]["name"]
        state, spec = self.state[name], self.fleet[name]
        running = any(self.device_plugin_pod(p) and _running(p) for p in pods)
        wanted = (advertised(spec.mig_layout, spec.gpus, strategy) or {}) if running else {}
        if wanted == state.advertised:
            return False
        gone = {k: "0" for k in state.advertised if k not in wanted}
        now = {k: str(v) for k, v in wanted.items()}
        capacity = {**gone, **now} if now else {}
        patch: Obj = {"status": {"allocatable": {**gone, **now}}}
        if capacity:
            patch["status"]["capacity"] = capacity
        self.client.patch("Node", name, patch, status=True)
        state.advertised = wanted
        return True

    def _kubelet_plugin(self, name: str, pods: list[Obj], mine: list[Obj]) -> bool:
        """`mine`: the node's ResourceSlices of the DRA driver."""
        state = self.state[name]
        running = any(self.kubelet_plugin_pod(p) and _running(p) for p in pods)
        if running:
            state.wipe_at = None
            if mine or name in self.withheld:
                return False
            for obj in self.published(name):
                self.client.create("ResourceSlice", obj)
            return True
        if mine and state.wipe_at is None:
            state.wipe_at = self.clock.now + WIPE_DELAY
            self.clock.after(
                WIPE_DELAY, f"kubelet wipes the ResourceSlices of {name}", lambda: self._wipe(name)
            )
        return False

    def _wipe(self, name: str) -> None:
        state = self.state.get(name)
        if state is None or state.wipe_at is None:
            return
        state.wipe_at = None
        for obj in self.client.list("ResourceSlice", fieldSelector=f"spec.nodeName={name}"):
            if obj["spec"].get("driver") == DRA_DRIVER:
                self.client.delete("ResourceSlice", obj["metadata"]["name"])

    def plugin_running(self, node: str) -> bool:
        pods = self.client.list("Pod", fieldSelector=f"spec.nodeName={node}")
        return any(self.kubelet_plugin_pod(p) and _running(p) for p in pods)

    # --- pods --------------------------------------------------------------------------------------

    def _pod(self, node: Obj, pod: Obj, on_node: list[Obj], claims: dict[tuple[str, str], Obj]) -> bool:
        meta = pod["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        uid = meta["uid"]
        if meta.get("deletionTimestamp"):
            return self._terminate(node, pod, key, on_node, claims)
        phase = pod.get("status", {}).get("phase", "Pending")
        if phase in ("Succeeded", "Failed"):
            return False
        if uid not in self.started:
            return self._start(node, pod, key, on_node, claims)
        return self._watch_program(pod, key)

    def _start(
        self, node: Obj, pod: Obj, key: str, on_node: list[Obj], claims: dict[tuple[str, str], Obj]
    ) -> bool:
        name = node["metadata"]["name"]
        state = self.state[name]
        uid = pod["metadata"]["uid"]
        bridged = bool((pod.get("status") or {}).get("extendedResourceClaimStatus"))
        wanted = {} if bridged else _gpu_requests(pod)
        allocatable = node.get("status", {}).get("allocatable") or {}
        for resource, count in wanted.items():
            used = sum(
                len(state.assigned.get(p["metadata"]["uid"], []))
                for p in on_node
                if p["metadata"]["uid"] != uid and p["metadata"]["uid"] in self.started
            )
            if int(str(allocatable.get(resource, "0"))) - used < count:
                return self._reject(
                    pod,
                    f"OutOf{resource}",
                    f"Node didn't have enough resource: {resource}, requested: {count}",
                )
        devices: list[str] = []
        for claim_name in _claim_names(pod):
            claim = claims.get((pod["metadata"]["namespace"], claim_name))
            results = ((claim or {}).get("status", {}).get("allocation") or {}).get("devices", {}).get(
                "results"
            ) or []
            if claim is None or not results:
                return False  # ContainerCreating: the claim is not allocated yet
            if not self._prepare(name, claim, results, on_node):
                return False
            devices += [str(r["device"]) for r in results if r.get("pool") == name]
        if wanted:
            taken = {i for p in on_node for i in state.assigned.get(p["metadata"]["uid"], [])}
            free = [i for i in range(self.fleet[name].gpus) if i not in taken]
            state.assigned[uid] = free[: sum(wanted.values())]
        visible = self._visible(pod, name, devices, state.assigned.get(uid, []))
        self.started.add(uid)
        self.launcher.start(pod, visible)
        self._status_running(pod, ready=self.launcher.ready_at_start(pod))
        return True

    def _prepare(self, node: str, claim: Obj, results: list[Obj], on_node: list[Obj]) -> bool:
        """NodePrepareResources: only a running kubelet plugin of the claim's driver prepares it."""
        state = self.state[node]
        uid = claim["metadata"]["uid"]
        if uid in state.prepared:
            return True
        ours = any(r.get("driver") == DRA_DRIVER for r in results)
        if ours and not any(self.kubelet_plugin_pod(p) and _running(p) for p in on_node):
            return False
        state.prepared[uid] = [str(r["device"]) for r in results]
        return True

    def _visible(self, pod: Obj, node: str, claimed: list[str], indexes: list[int]) -> list[str]:
        """`nvidia-smi -L` lines of the GPUs the container sees: its claims' devices, its device-plugin
        GPUs, or every GPU when it sets NVIDIA_VISIBLE_DEVICES=all."""
        if not self.fleet[node].gpus:
            return []
        devices = self.devices(node)
        by_name = {str(d["name"]): d for d in devices}
        product = lookup_product(self.fleet[node].product).product_name
        whole = [d for d in devices if "parentUUID" not in (d.get("attributes") or {})]
        chosen: list[dict[str, Any]] = [by_name[n] for n in claimed if n in by_name]
        chosen += [whole[i] for i in indexes if i < len(whole)]
        env = {
            e.get("name"): e.get("value")
            for c in pod["spec"].get("containers") or []
            for e in c.get("env") or []
        }
        if str(env.get(VISIBLE_DEVICES, "")).lower() == "all":
            chosen = whole
        lines = []
        for i, device in enumerate(chosen):
            attributes = device.get("attributes") or {}
            uuid = (attributes.get("uuid") or {}).get("string", "")
            if "parentUUID" in attributes:
                profile = (attributes.get("profile") or {}).get("string", "")
                parent = (attributes["parentUUID"] or {}).get("string", "")
                lines.append(f"GPU {i}: {product} (UUID: {parent})")
                lines.append(f"  MIG {profile} Device 0: (UUID: {uuid})")
            else:
                lines.append(f"GPU {i}: {product} (UUID: {uuid})")
        return lines

    def _reject(self, pod: Obj, reason: str, message: str) -> bool:
        self.started.add(pod["metadata"]["uid"])
        self.client.patch(
            "Pod",
            pod["metadata"]["name"],
            {"status": {"phase": "Failed", "reason": reason, "message": message}},
            pod["metadata"]["namespace"],
            status=True,
        )
        return True

    def _status_running(self, pod: Obj, *, ready: bool = True) -> None:
        containers = pod["spec"].get("containers") or []
        flag = "True" if ready else "False"
        ip = self.launcher.pod_ip(pod)
        status = {
            "phase": "Running",
            "hostIP": "127.0.0.1",
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "startTime": _NOW,
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": _NOW},
                {"type": "Initialized", "status": "True", "lastTransitionTime": _NOW},
                *(
                    {"type": t, "status": flag, "lastTransitionTime": _NOW}
                    for t in ("ContainersReady", "Ready")
                ),
            ],
            "containerStatuses": [
                {
                    "name": c["name"],
                    "image": c.get("image", ""),
                    "imageID": "",
                    "ready": ready,
                    "started": True,
                    "restartCount": 0,
                    "state": {"running": {"startedAt": _NOW}},
                }
                for c in containers
            ],
        }
        self._patch_status(pod, status)

    def _patch_status(self, pod: Obj, status: Obj) -> None:
        """A strategic merge, as the kubelet's status manager patches: conditions merge by type, so
        those others set (the eviction's DisruptionTarget, the scheduler's) stay."""
        try:
            meta = pod["metadata"]
            body = {"status": status}
            self.client.patch("Pod", meta["name"], body, meta["namespace"], status=True, strategic=True)
        except ApiError as exc:
            if exc.status != 404:
                raise

    def _watch_program(self, pod: Obj, key: str) -> bool:
        codes = self.launcher.exit_codes(pod)
        if codes is None:
            return self._serve(pod)
        self._release_node(pod)
        self._terminal(pod, codes)
        return True

    def _serve(self, pod: Obj) -> bool:
        """A running server: its volumes follow their objects; Ready once its readiness probe answers."""
        if not self.launcher.is_server(pod):
            return False
        self.launcher.refresh(pod)
        ready = any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in (pod.get("status") or {}).get("conditions") or []
        )
        if ready or not self.launcher.probe(pod):
            return False
        self._status_running(pod)
        return True

    def _terminal(self, pod: Obj, codes: dict[str, int]) -> None:
        """The pod's last status: every container terminated with its exit code (137 for one that
        ran no program, as a killed container reports), phase Failed or Succeeded
        (restartPolicy Never, or a deleted pod: the kubelet's status manager makes every stopped pod
        terminal before it goes, which is what lets the Job controller drop its tracking finalizer)."""
        statuses = []
        for c in pod["spec"].get("containers") or []:
            code = codes.get(c["name"], 137)
            terminated = {
                "exitCode": code,
                "reason": "Completed" if code == 0 else "Error",
                "finishedAt": _NOW,
            }
            statuses.append(
                {
                    "name": c["name"],
                    "image": c.get("image", ""),
                    "imageID": "",
                    "ready": False,
                    "started": False,
                    "restartCount": 0,
                    "state": {"terminated": terminated},
                }
            )
        failed = any(s["state"]["terminated"]["exitCode"] != 0 for s in statuses)
        not_ready = [
            {"type": t, "status": "False", "reason": "PodCompleted", "lastTransitionTime": _NOW}
            for t in ("Ready", "ContainersReady")
        ]
        status = {
            "phase": "Failed" if failed else "Succeeded",
            "containerStatuses": statuses,
            "conditions": not_ready,
        }
        self._patch_status(pod, status)

    def _release_node(self, pod: Obj) -> None:
        node = pod["spec"].get("nodeName")
        state = self.state.get(str(node))
        if state is not None:
            state.assigned.pop(pod["metadata"]["uid"], None)

    def _terminate(
        self, node: Obj, pod: Obj, key: str, on_node: list[Obj], claims: dict[tuple[str, str], Obj]
    ) -> bool:
        if not self.launcher.stopped(pod):
            return False
        name = node["metadata"]["name"]
        state = self.state[name]
        for claim_name in _claim_names(pod):
            claim = claims.get((pod["metadata"]["namespace"], claim_name))
            if claim is None or claim["metadata"]["uid"] not in state.prepared:
                continue
            others = [
                p for p in on_node
                if p["metadata"]["uid"] != pod["metadata"]["uid"] and claim_name in _claim_names(p)
                and p["metadata"]["uid"] in self.started and not p["metadata"].get("deletionTimestamp")
            ]  # fmt: skip
            if others:
                continue
            if not any(self.kubelet_plugin_pod(p) and _running(p) for p in on_node):
                self.stuck[key] = (
                    f"claim {claim_name} cannot be unprepared: no DRA kubelet plugin runs on {name}"
                )
                return False
            del state.prepared[claim["metadata"]["uid"]]
        self.stuck.pop(key, None)
        self._release_node(pod)
        if (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
            self._terminal(pod, self.launcher.exit_codes(pod) or {})
        self.started.discard(pod["metadata"]["uid"])
        self.launcher.forget(pod)
        return self.client.delete(
            "Pod", pod["metadata"]["name"], pod["metadata"]["namespace"], grace=0, uid=pod["metadata"]["uid"]
        )


class _LogServer:
    """The kubelet endpoint the apiserver proxies `kubectl logs` to: `/containerLogs/<ns>/<pod>/<container>`."""

    def __init__(self, launcher: PodLauncher) -> None:
        self.launcher = launcher
        handler = self._handler()
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(launcher.cert), str(launcher.key))
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.port = int(self.httpd.server_address[1])
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="kubelet-api", daemon=True)
        self._thread.start()

    def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        launcher = self.launcher

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parsed = urllib.parse.urlparse(self.path)
                parts = parsed.path.strip("/").split("/")
                if len(parts) == 4 and parts[0] == "containerLogs":
                    text = launcher.log(parts[1], parts[2], parts[3])
                    query = urllib.parse.parse_qs(parsed.query)
                    tail = query.get("tailLines")
                    if text is not None and tail:
                        lines = text.splitlines(keepends=True)
                        text = "".join(lines[-int(tail[0]) :]) if int(tail[0]) > 0 else ""
                    self._answer(200 if text is not None else 404, text or "")
                else:
                    self._answer(404, json.dumps({"message": "not served by the rehearsal kubelet"}))

            def _answer(self, code: int, body: str) -> None:
                data = body.encode()
                self.send_response(code)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:
                return

        return Handler

    def stop(self) -> None:
        """Stop serving and close the socket; the serving thread is joined."""
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=5)
