"""The rendered Jobs: gate checks, the allocator switch, the validation workload.

A gate Job (its `gpuplatform.dev/gate` label) is judged by the jq program its rendered script
runs, on the model's cluster with the facts it mounts (`gate_verdict.py`); a Job with that label
that runs no gate program is reported and taken to finish at once, as its command would. The
allocator-switch Jobs (`gpuplatform.dev/switch`) act on what their rendered script says: the
nodes, selector, label and value, and the conditions it waits for (`render/switch_script.py`). A
Job runs once: Kubernetes Jobs are immutable, so an engine re-runs one only by recreating it (Argo CD hook `BeforeHookCreation`, or a new name).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from gpuplatform.gates.matchers import DEVICE_PLUGIN_LABEL, DRA_DRIVER, DRA_KUBELET_PLUGIN_SUFFIX
from gpuplatform.kube.nodes import GroupSelector
from gpuplatform.labels import GATE_LABEL, NVIDIA_RESOURCE_PREFIX, SWITCH_LABEL, VALIDATION_LABEL
from gpuplatform.render.allocator_switch import SWITCH_IDENTITY
from gpuplatform.render.meta import Obj
from gpuplatform.render.switch_script import SwitchScript, parse_switch_job
from gpuplatform.simulate.gate_verdict import gate_lines, gate_program, holds, mounted_file
from gpuplatform.simulate.groups import gfd_labels
from gpuplatform.simulate.model import Group, Workload
from gpuplatform.simulate.snapshot import probe_pod
from gpuplatform.simulate.snapshot_nodes import dra_chart_name
from gpuplatform.simulate.world import World

__all__ = ["job_order", "job_status", "retries", "run_job"]


def _data(world: World, obj: Obj) -> dict[str, Any]:
    """The gate's facts: the file its container's `DATA_FILE` names, read from the ConfigMap volume
    that holds it, as the script reads them (`render/gate_jobs.py`); none while it is not applied."""
    pod = obj["spec"]["template"]["spec"] | {"namespace": obj["metadata"].get("namespace", "")}
    env = {e.get("name"): e.get("value") for e in (pod.get("containers") or [{}])[0].get("env") or []}
    text = mounted_file(world, pod, str(env.get("DATA_FILE") or ""))
    try:
        data = json.loads(text or "{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _gate(world: World, obj: Obj) -> list[str]:
    """What keeps gate Job `obj` from finishing (empty: it holds): the `violation:` and `unknown:`
    lines of the program its script runs (`gate_verdict.py`) on the model's cluster, with the facts
    it mounts. Once it holds, the Job releases the probes its program names (`act:` lines) and its
    pod's log keeps the proof. A Job that runs no gate program finishes at once."""
    meta = obj["metadata"]
    key = f"{meta.get('namespace', '')}/{meta['name']}"
    world.cluster.gate_logs.pop(key, None)
    gate = gate_program(world, obj)
    if gate is None:
        world.notes.add(f"Job {meta['name']} runs no gate program: taken to finish at once")
        return []
    if isinstance(gate, str):
        return [gate]
    data = _data(world, obj)
    if not data:
        return [f"the facts ConfigMap of Job {meta['name']} is not applied"]
    lines = gate_lines(world, gate, data)
    if world.observe is not None:
        world.observe(world, f"gate {gate.gate} {'holds' if holds(lines) else 'waits'}")
    if not holds(lines):
        return [line.split(": ", 1)[1] for line in lines if line.startswith(("violation: ", "unknown: "))]
    acts = [line.split() for line in lines if line.startswith("act: ")]
    log = [line for line in lines if not line.startswith("act: ")]
    for _, _, namespace, pod, claim in acts:
        log.append(f"proof: removed validation pod {namespace}/{pod}")
        if claim != "-":
            log.append(f"proof: claim {namespace}/{claim} released after its pod was removed")
    released = {(namespace, pod) for _, _, namespace, pod, _ in acts}
    _read_and_remove(
        world, [w for w in world.cluster.workloads if w.probe and (w.namespace, probe_pod(w)) in released]
    )
    world.cluster.gate_logs[key] = "".join(f"{line}\n" for line in [*log, f"gate {gate.gate} holds"])
    return []


def _plugin_left(world: World, script: SwitchScript, g: Group) -> list[str]:
    """What `release`'s check finds on `g`: a kubelet plugin pod in the namespace and of the
    DaemonSet it names, ResourceSlices of the driver it names."""
    found = []
    daemonset = f"{dra_chart_name(world)}{DRA_KUBELET_PLUGIN_SUFFIX}"
    if (
        script.plugin_suffix is not None
        and script.namespace == world.plan.platform.dra_driver.namespace
        and daemonset.endswith(script.plugin_suffix)
        and g.kubelet_plugin != "absent"
    ):
        found.append(f"the DRA kubelet plugin remains on {g.name}")
    if script.slice_driver == DRA_DRIVER and g.slices != "none":
        found.append(f"the {DRA_DRIVER} ResourceSlices remain on {g.name}")
    return found


def _handover(world: World, script: SwitchScript, g: Group) -> list[str]:
    """What `enable`'s check finds on `g`: a resource with the prefix it names allocatable (every
    device-plugin resource: whole GPUs, MIG slices, shared or renamed), a live pod with the label it
    names (the device plugin's) or requesting such a resource (every device-plugin workload)."""
    found = []
    if script.allocatable == NVIDIA_RESOURCE_PREFIX and g.device_plugin_registered:
        found.append(f"{g.name} still advertises {NVIDIA_RESOURCE_PREFIX}* resources")
    if script.pod_label == DEVICE_PLUGIN_LABEL and "device-plugin" in g.operands:
        found.append(f"the device plugin still runs on {g.name}")
    if script.requested == NVIDIA_RESOURCE_PREFIX:
        found += [
            f"{w.key} still holds device-plugin GPUs on {g.name}"
            for w in world.cluster.workloads
            if w.group == g.id and w.allocator == "device-plugin" and w.phase != "done"
        ]
    return found


def _observed(world: World, job: str, found: list[str]) -> list[str]:
    """A checkpoint where a switch Job has judged the cluster (`waits` when it found `found`)."""
    if world.observe is not None:
        world.observe(world, f"{job} {'waits' if found else 'proceeds'}")
    return found


def _waited(world: World, script: SwitchScript, check: Callable[[], list[str]]) -> list[str]:
    """What the Job's check still finds when the Job stops waiting: it checks at once (the Job may
    start before the controllers react), and a Job that waits checks again after each step of
    theirs, going on as soon as its check holds."""
    if not script.waits or not check():
        return []
    world.settle(until=lambda: not check())
    return check()


def _release(world: World, script: SwitchScript) -> list[str]:
    """`release`: take its label off the nodes it names, then wait for what its check names to go."""
    groups = [g for g in world.cluster.groups if set(script.nodes) & set(g.nodes)]
    if script.label is not None:
        for g in groups:
            g.set_label(script.label, None, SWITCH_IDENTITY)
    world.record(
        "job",
        f"switch release: {script.label or 'no label'} removed from {', '.join(g.name for g in groups) or 'no node'}",
    )
    found = _waited(world, script, lambda: [line for g in groups for line in _plugin_left(world, script, g)])
    return _observed(world, "switch release", found)


def _selected(script: SwitchScript, g: Group) -> bool:
    return bool(script.selects) and all(
        (key not in g.labels) if value is None else g.labels.get(key) == value
        for key, value in script.selects
    )


def _enable(world: World, script: SwitchScript) -> list[str]:
    """`enable`: on the nodes its selector finds, wait for its check, then set its label."""
    groups = [g for g in world.cluster.groups if _selected(script, g)]
    found = _waited(world, script, lambda: [line for g in groups for line in _handover(world, script, g)])
    if _observed(world, "switch enable", found) or script.label is None or script.value is None:
        return found
    for g in groups:
        if script.label not in g.labels:
            g.set_label(script.label, script.value, SWITCH_IDENTITY)
    world.record(
        "job",
        f"switch enable: {script.label}={script.value} on {', '.join(g.name for g in groups) or 'no node'}",
    )
    world.settle()
    return []


def _switch(world: World, action: str, obj: Obj) -> list[str]:
    """The allocator-switch Job `action` as its rendered script says (`render/switch_script.py`)."""
    script = parse_switch_job(obj, action)
    return _release(world, script) if action == "release" else _enable(world, script)


def holds_claim(pod: Obj) -> bool:
    """The validation pod keeps running (and its claim allocated) until something removes it.

    A pod that ends frees its claim: the resourceclaim controller deallocates and deletes the
    generated claim of a finished pod (kubernetes pkg/controller/resourceclaim). A container that
    sleeps is taken to hold it.
    """
    return "sleep" in " ".join(str(c) for c in (pod.get("containers") or [{}])[0].get("command") or [])


def _node_pools(world: World, spec: Obj, side: str) -> tuple[str, ...]:
    """The pools a validation pod may land on: those with a node its required node affinity selects
    (every term, ORed, as the scheduler reads them: k8s.io/component-helpers nodeaffinity); without
    one, the pools the target wave declares in `side`'s mode."""
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if not required:
        return tuple(p for p, m in world.declared.get(world.target, {}).items() if m == side)
    pools: list[str] = []
    selector = GroupSelector(required)
    for g in world.cluster.groups:
        if g.pool not in pools and selector.selects_some(
            g.nodes, gfd_labels(world.plan.pools[g.pool], g) | g.labels
        ):
            pools.append(g.pool)
    return tuple(pools) or ("<no node>",)


def _validation(world: World, obj: Obj) -> list[str]:
    """A validation pod (claim pilot, a side of the bridge): it runs and holds what it was given.

    #10's pods print `nvidia-smi -L` and sleep until the gate removes them; one that ends at once
    frees its claim (kubernetes pkg/controller/resourceclaim deletes a done pod's generated claim).
    """
    meta, spec = obj["metadata"], obj["spec"]["template"]["spec"]
    claims = spec.get("resourceClaims") or []
    role = str((meta.get("labels") or {}).get(VALIDATION_LABEL, "claim-pilot"))
    template = str(claims[0].get("resourceClaimTemplateName", "")) if claims else ""
    tolerations = list(spec.get("tolerations") or [])
    if claims:
        workload = Workload(
            meta["name"],
            meta["namespace"],
            "claim",
            1,
            "validation",
            tolerations=tolerations,
            template=template,
            device_class=world.cluster.templates.get(f"{meta['namespace']}/{template}", ""),
            moves=True,
        )
    else:
        side = "dra" if role.endswith("dra") else "legacy"
        workload = Workload(
            meta["name"],
            meta["namespace"],
            "legacy",
            1,
            "validation",
            tolerations=tolerations,
            pools=_node_pools(world, spec, side),
            moves=True,
        )
    workload.probe = role
    world.cluster.probes[workload.key] = obj
    world.cluster.workloads = [w for w in world.cluster.workloads if w.key != workload.key]
    world.cluster.workloads.append(workload)
    world.settle()
    if workload.phase != "running":
        return [f"validation pod {workload.key} ({role}) did not run: {workload.reason or 'unschedulable'}"]
    if not holds_claim(spec):
        workload.deleted = True
        workload.phase = "terminating"
        world.record(
            "resourceclaim-controller",
            f"{workload.key} finished: its generated claim is deallocated and deleted",
        )
        world.settle()
    return []


def _read_and_remove(world: World, probes: list[Workload]) -> None:
    """The gate has read the probes: it deletes their pods, which release what they held."""
    for w in probes:
        w.evict("read by its gate", delete=True)
    if probes:
        world.record("gate", f"removes {', '.join(w.key for w in probes)}")
        world.settle()


def job_order(obj: Obj) -> int:
    """Within one unit: other objects, then workload Jobs, then gate Jobs (hooks of one phase run
    together, and a gate retries until the pods it reads exist)."""
    if obj["kind"] != "Job":
        return 0
    return 2 if GATE_LABEL in (obj["metadata"].get("labels") or {}) else 1


def retries(obj: Obj) -> bool:
    """The Job starts a new attempt when its check exits 3 (`podFailurePolicy` Ignore) instead of failing.

    Kubernetes Job controller: a pod failure matched by an `Ignore` rule does not count towards
    `backoffLimit`, so the Job keeps running until an attempt succeeds.
    """
    for rule in (obj["spec"].get("podFailurePolicy") or {}).get("rules") or []:
        codes = rule.get("onExitCodes") or {}
        if rule.get("action") == "Ignore" and codes.get("operator") == "In" and 3 in codes.get("values", []):
            return True
    return False


def job_status(world: World, obj: Obj) -> str:
    """Run a Job: `complete`, `waiting: <why>` (it retries until its check holds) or `failed: <why>`."""
    found = run_job(world, obj)
    if not found:
        return "complete"
    if len(found) > 3:
        found = [*found[:3], f"and {len(found) - 3} more"]
    return ("waiting: " if retries(obj) else "failed: ") + "; ".join(found)


def run_job(world: World, obj: Obj) -> list[str]:
    """Run a Job once; what made it fail (empty: complete)."""
    labels = obj["metadata"].get("labels") or {}
    if GATE_LABEL in labels:
        world.settle()
        return _gate(world, obj)
    if SWITCH_LABEL in labels:
        return _switch(world, labels[SWITCH_LABEL], obj)
    if VALIDATION_LABEL in labels or obj["spec"]["template"]["spec"].get("resourceClaims"):
        return _validation(world, obj)
    return []
