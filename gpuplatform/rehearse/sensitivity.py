"""A gate that cannot fail proves nothing: once a wave has settled, each of its post-transition gates
is run again, as the tree renders its Job, on the cluster with the one fault it exists to catch;
it must not hold.

The copy is the tree's Job with another name and `TIMEOUT` (one attempt's length) cut to
`ATTEMPT` virtual seconds, so its first attempt ends quickly: exit 3 (does not hold) is the answer
wanted, exit 0 (holds) is the violation `gate-blind`. Faults, each undone afterwards:

- `allocator-exclusivity`: a DRA node's `allocatable` shows `nvidia.com/gpu` (the device plugin back);
- `inventory`: a DRA node's kubelet plugin runs but publishes no ResourceSlice;
- `operands`: an operand pod on a DRA node is not Ready.

Gates whose faults the rehearsal cannot make yet (a claim allocated on a legacy node, a probe that
sees another device) are not checked this way; the late operator exercises the blocking ones.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from functools import partial

from gpuplatform.gates.matchers import DRA_DRIVER
from gpuplatform.labels import GATE_LABEL, GPU_RESOURCE, PROBE_LABEL
from gpuplatform.rehearse.client import Obj
from gpuplatform.rehearse.cluster import Rehearsal, WaitFailed
from gpuplatform.render.tree import Tree

__all__ = ["ATTEMPT", "Blind", "blind_gates"]

#: Virtual seconds the copy's one attempt lasts.
ATTEMPT = 30
_MODE_SUFFIX = "/mode"


@dataclass(frozen=True)
class Blind:
    """A gate that held on a cluster with the fault it exists to catch."""

    gate: str
    fault: str
    job: str


def _dra_node(cluster: Rehearsal) -> str:
    """A node of the fleet that runs the DRA kubelet plugin now ('' when none)."""
    for pod in cluster.client.list("Pod"):
        node = str(pod["spec"].get("nodeName") or "")
        phase = (pod.get("status") or {}).get("phase")
        if node in cluster.agents.fleet and cluster.agents.kubelet_plugin_pod(pod) and phase == "Running":
            return node
    return ""


@contextmanager
def _device_plugin_back(cluster: Rehearsal, node: str) -> Iterator[str]:
    cluster.client.patch("Node", node, {"status": {"allocatable": {GPU_RESOURCE: "1"}}}, status=True)
    try:
        yield f"node {node} advertises nvidia.com/gpu=1 while it is on DRA"
    finally:
        cluster.client.patch("Node", node, {"status": {"allocatable": {GPU_RESOURCE: "0"}}}, status=True)


@contextmanager
def _no_slices(cluster: Rehearsal, node: str) -> Iterator[str]:
    cluster.agents.withheld.add(node)
    for obj in cluster.client.list("ResourceSlice", fieldSelector=f"spec.nodeName={node}"):
        if obj["spec"].get("driver") == DRA_DRIVER:
            cluster.client.delete("ResourceSlice", obj["metadata"]["name"])
    try:
        yield f"the kubelet plugin of {node} runs and publishes no device"
    finally:
        cluster.agents.withheld.discard(node)


@contextmanager
def _operand_unready(cluster: Rehearsal, node: str) -> Iterator[str]:
    namespace = cluster.stack.operator_namespace
    pods = cluster.client.list("Pod", namespace, fieldSelector=f"spec.nodeName={node}")
    pod = next((p for p in pods if not cluster.agents.device_plugin_pod(p)), None)
    if pod is None:
        yield ""
        return
    name = pod["metadata"]["name"]

    def ready(value: str) -> None:
        conditions = [{"type": t, "status": value} for t in ("Ready", "ContainersReady")]
        statuses = [{"name": c["name"], "ready": value == "True"} for c in pod["spec"]["containers"]]
        body = {"status": {"conditions": conditions, "containerStatuses": statuses}}
        cluster.client.patch("Pod", name, body, namespace, status=True, strategic=True)

    ready("False")
    try:
        yield f"operand pod {namespace}/{name} on {node} is not Ready"
    finally:
        ready("True")


#: Gate -> the fault it exists to catch, made on one DRA node (yields what it did; '' when it could not).
FAULTS: dict[str, Callable[[Rehearsal, str], AbstractContextManager[str]]] = {
    "allocator-exclusivity": _device_plugin_back,
    "inventory": _no_slices,
    "operands": _operand_unready,
}


def _copy(job: Obj) -> Obj:
    out = copy.deepcopy(job)
    meta = out["metadata"]
    meta["name"] = f"{meta['name'][:50]}-blind"
    for key in ("annotations", "resourceVersion", "uid"):
        meta.pop(key, None)
    spec = out["spec"]
    spec.pop("podFailurePolicy", None)
    spec["backoffLimit"] = 0
    template = spec["template"]
    template.setdefault("metadata", {}).setdefault("labels", {})[PROBE_LABEL] = "gate-sensitivity"
    for container in template["spec"].get("containers") or []:
        env = [e for e in container.get("env") or [] if e.get("name") != "TIMEOUT"]
        container["env"] = [*env, {"name": "TIMEOUT", "value": str(ATTEMPT)}]
    return out


def _answer(cluster: Rehearsal, job: Obj) -> tuple[int] | None:
    """The first attempt's exit code, once it has one (a tuple, so that 0 is an answer)."""
    code = _exit_code(cluster, job)
    return None if code is None else (code,)


def _exit_code(cluster: Rehearsal, job: Obj) -> int | None:
    meta = job["metadata"]
    for pod in cluster.client.list("Pod", meta["namespace"], labelSelector=f"job-name={meta['name']}"):
        for status in (pod.get("status") or {}).get("containerStatuses") or []:
            terminated = (status.get("state") or {}).get("terminated")
            if terminated is not None:
                return int(terminated.get("exitCode", 0))
    return None


def blind_gates(cluster: Rehearsal, tree: Tree, wave_dir: str) -> list[Blind]:
    """Each post gate of the wave with a fault the rehearsal can make, run on the faulty cluster;
    the ones that held."""
    node = _dra_node(cluster)
    if not node:
        return []
    jobs = [
        o
        for path, content in sorted(tree.files.items())
        if path.startswith(f"waves/{wave_dir}/50-gates/post/") and isinstance(content, list)
        for o in content
        if o.get("kind") == "Job" and (o["metadata"].get("labels") or {}).get(GATE_LABEL) in FAULTS
    ]
    blind = []
    for job in jobs:
        gate = job["metadata"]["labels"][GATE_LABEL]
        probe = _copy(job)
        with FAULTS[gate](cluster, node) as fault:
            if not fault:
                continue
            cluster.settle()
            cluster.launcher.programs.add((probe["metadata"]["namespace"], probe["metadata"]["name"]))
            cluster.apply([probe], "rehearsal-gate-sensitivity")
            try:
                [code] = cluster.wait(
                    partial(_answer, cluster, probe), ATTEMPT * 20, f"gate {gate} on a fault"
                )
            except WaitFailed:
                code = None
            finally:
                cluster.delete("Job", probe["metadata"]["name"], probe["metadata"]["namespace"], wait=True)
        if code == 0:
            blind.append(Blind(gate, fault, job["metadata"]["name"]))
    return blind
