"""The offline half of each gate: the same invariant, evaluated in Python against a snapshot.

A gate whose inputs the snapshot lacks (a kind missing, kubectl forbidden) is `unknown`, which
never counts as held.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from gpuplatform.cel import CelError, DeviceSelector, DeviceSet
from gpuplatform.errors import InputError
from gpuplatform.evidence.snapshot import Snapshot
from gpuplatform.gates import Gate, gates_for_wave, node_names
from gpuplatform.gates.matchers import (
    DRA_DRIVER,
    GPU_RESOURCE,
    is_device_plugin_pod,
    is_dra_kubelet_plugin_pod,
)
from gpuplatform.inventory.catalog import lookup_product
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.selectors import full_gpu_expression, tier_expression
from gpuplatform.versions import parse_release

__all__ = ["GateResult", "Status", "evaluate_gate", "evaluate_wave", "extra_checks"]

Status = Literal["held", "broken", "unknown"]


@dataclass
class GateResult:
    """A gate's verdict with the objects that prove or break it."""

    id: str
    title: str
    status: Status = "held"
    findings: list[str] = field(default_factory=list)
    proof: list[str] = field(default_factory=list)
    severity: str = "error"

    def broken(self, finding: str) -> None:
        self.status = "broken"
        self.findings.append(finding)

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "status": self.status,
            "findings": self.findings,
            "proof": self.proof,
        }


def _need(result: GateResult, snapshot: Snapshot, *kinds: str) -> bool:
    missing = [k for k in kinds if snapshot.items(k) is None]
    if missing:
        result.status = "unknown"
        result.findings.append(f"the snapshot lacks {', '.join(missing)}")
    return not missing


def _allocation(claim: dict[str, Any]) -> dict[str, Any]:
    allocation: dict[str, Any] = (claim.get("status") or {}).get("allocation") or {}
    return allocation


def _results(claim: dict[str, Any]) -> list[dict[str, Any]]:
    """The allocated devices of a claim (driver, pool, device); empty when unallocated."""
    results: list[dict[str, Any]] = (_allocation(claim).get("devices") or {}).get("results") or []
    return results


def _claim_nodes(claim: dict[str, Any]) -> list[str]:
    allocation = _allocation(claim)
    nodes = [str(r["pool"]) for r in _results(claim) if r.get("pool")]
    for term in (allocation.get("nodeSelector") or {}).get("nodeSelectorTerms") or []:
        for match in term.get("matchFields") or []:
            if match.get("key") == "metadata.name":
                nodes += match.get("values") or []
    return sorted(set(nodes))


def _name(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata", {})
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else str(meta.get("name"))


def _allocator_exclusivity(plan: Plan, state: WaveState, snapshot: Snapshot, result: GateResult) -> None:
    if not _need(result, snapshot, "nodes", "pods"):
        return
    nodes = {n["metadata"]["name"]: n for n in snapshot.items("nodes") or []}
    pods = snapshot.items("pods") or []
    namespace = plan.platform.dra_driver.namespace
    for name in node_names(plan, state, "dra"):
        node = nodes.get(name)
        if node is None:
            result.broken(f"node {name} is missing from the cluster")
            continue
        gpus = str((node.get("status", {}).get("allocatable") or {}).get(GPU_RESOURCE, "0"))
        on_node = [
            p
            for p in pods
            if p.get("spec", {}).get("nodeName") == name
            and p.get("status", {}).get("phase") not in ("Succeeded", "Failed")
        ]
        device_plugin = [p for p in on_node if is_device_plugin_pod(p)]
        dra = [p for p in on_node if is_dra_kubelet_plugin_pod(p, namespace)]
        if (gpus != "0" or device_plugin) and dra:
            result.broken(
                f"node {name} has TWO ALLOCATORS: the device plugin ({GPU_RESOURCE}={gpus}) and the DRA kubelet plugin"
            )
        elif gpus != "0":
            result.broken(f"node {name} advertises {GPU_RESOURCE}={gpus}")
        if device_plugin:
            result.broken(f"node {name} runs device-plugin pod {_name(device_plugin[0])}")
        if not dra:
            result.broken(f"node {name} runs no DRA kubelet plugin")
        else:
            result.proof.append(f"node {name}: {GPU_RESOURCE}={gpus}, kubelet plugin {_name(dra[0])}")


def _inventory(plan: Plan, state: WaveState, snapshot: Snapshot, result: GateResult) -> None:
    if not _need(result, snapshot, "resourceslices"):
        return
    slices = snapshot.items("resourceslices") or []
    by_node: dict[str, list[dict[str, Any]]] = {}
    for s in slices:
        if s.get("spec", {}).get("driver") == DRA_DRIVER and s["spec"].get("nodeName"):
            by_node.setdefault(s["spec"]["nodeName"], []).extend(s["spec"].get("devices") or [])
    for pool in plan.platform.node_pools:
        if state.pool_modes[pool.name] != "dra":
            continue
        try:
            product = lookup_product(pool.product)
        except InputError:
            product = None
        for name in pool.nodes:
            devices = [
                d
                for d in by_node.get(name, [])
                if (d.get("attributes") or {}).get("type", {}).get("string") == "gpu"
            ]
            if name not in by_node:
                result.broken(f"node {name} publishes no {DRA_DRIVER} ResourceSlice")
                continue
            if len(devices) != pool.gpus_per_node and not pool.mig_layout:
                result.broken(
                    f"node {name} publishes {len(devices)} GPUs, pool {pool.name} declares {pool.gpus_per_node}"
                )
            for d in devices:
                got = (d.get("attributes") or {}).get("productName", {}).get("string")
                memory = (d.get("capacity") or {}).get("memory", {}).get("value")
                if product is not None and got != product.product_name:
                    result.broken(
                        f"{name}/{d.get('name')} is {got!r}, pool {pool.name} declares {product.product_name!r}"
                    )
                elif product is not None and memory != product.memory:
                    result.broken(
                        f"{name}/{d.get('name')} has memory {memory}, the catalog says {product.memory}"
                    )
            result.proof.append(f"node {name}: {len(devices)} GPU device(s) published")
    minor = parse_release(plan.platform.kubernetes.version).minor
    targets = [
        (f"tier {t}", tier_expression(next(x for x in plan.platform.tiers if x.name == t)))
        for t in state.tiers
    ]
    targets += [(f"bridge {b}", full_gpu_expression()) for b in state.bridges]
    selectors = [(label, DeviceSelector(e, kubernetes=minor, new_expression=False)) for label, e in targets]
    reads = {read for _, selector in selectors for read in selector.reads}
    published: dict[str, DeviceSet] = {}
    for i, s in enumerate(slices):
        driver = s["spec"]["driver"]
        published.setdefault(driver, DeviceSet(driver, reads)).add(i, s["spec"].get("devices") or [])
    for label, selector in selectors:
        count = 0
        for driver, prepared in published.items():
            try:
                count += selector.count_matches(driver, prepared)
            except CelError as exc:
                result.broken(f"{label}: {exc}")
        if count == 0:
            result.broken(f"{label} matches no published device")
        else:
            result.proof.append(f"{label}: {count} device(s)")


def _rollback_safety(plan: Plan, state: WaveState, snapshot: Snapshot, result: GateResult) -> None:
    if not _need(result, snapshot, "resourceclaims"):
        return
    legacy = set(node_names(plan, state, "legacy"))
    for claim in snapshot.items("resourceclaims") or []:
        for node in _claim_nodes(claim):
            if node in legacy:
                result.broken(f"claim {_name(claim)} is allocated on legacy node {node}")
    if result.status == "held":
        result.proof.append(f"no claim allocated on {len(legacy)} legacy node(s)")


def _claim_pilot(plan: Plan, state: WaveState, snapshot: Snapshot, result: GateResult) -> None:
    v = plan.platform.validation
    if v is None or not _need(result, snapshot, "pods", "resourceclaims", "resourceslices"):
        return
    tenant = next(t for t in plan.platform.tenants if t.name == v.tenant)
    pods = [
        p
        for p in snapshot.items("pods") or []
        if p["metadata"].get("namespace") == tenant.ns
        and (p["metadata"].get("labels") or {}).get("job-name") == v.name
    ]
    if not pods:
        result.broken(f"no pod of the validation Job {tenant.ns}/{v.name}")
        return
    pod = pods[0]
    claim_name = next(
        (
            s.get("resourceClaimName")
            for s in pod.get("status", {}).get("resourceClaimStatuses") or []
            if s.get("name") == "gpu"
        ),
        None,
    )
    claim = next(
        (
            c
            for c in snapshot.items("resourceclaims") or []
            if c["metadata"].get("name") == claim_name and c["metadata"].get("namespace") == tenant.ns
        ),
        None,
    )
    if claim is None:
        result.broken(f"pod {_name(pod)} has no allocated claim")
        return
    results = _results(claim)
    if not results:
        result.broken(f"claim {_name(claim)} is not allocated")
        return
    pool, device = results[0].get("pool"), results[0].get("device")
    if pool not in node_names(plan, state, "dra"):
        result.broken(f"claim {_name(claim)} is allocated on {pool}, not a DRA node")
    uuid = next(
        (
            (d.get("attributes") or {}).get("uuid", {}).get("string")
            for s in snapshot.items("resourceslices") or []
            if s["spec"].get("pool", {}).get("name") == pool
            for d in s["spec"].get("devices") or []
            if d.get("name") == device
        ),
        None,
    )
    rows = snapshot.nvidia_smi.get(_name(pod))
    if rows is None:
        result.status = "unknown" if result.status == "held" else result.status
        result.findings.append(f"no nvidia-smi output for {_name(pod)} (snapshot --nvidia-smi {_name(pod)})")
        return
    seen = [r.get("uuid") for r in rows]
    if uuid not in seen:
        result.broken(f"container saw {seen}, the claim holds {pool}/{device} with uuid {uuid}")
    else:
        result.proof.append(f"claim {_name(claim)} -> {pool}/{device} uuid {uuid}, seen by the container")


EVALUATORS: dict[str, Callable[[Plan, WaveState, Snapshot, GateResult], None]] = {
    "allocator-exclusivity": _allocator_exclusivity,
    "inventory": _inventory,
    "rollback-safety": _rollback_safety,
    "claim-pilot": _claim_pilot,
}


def evaluate_gate(gate: Gate, plan: Plan, state: WaveState, snapshot: Snapshot) -> GateResult:
    """One gate against a snapshot."""
    result = GateResult(gate.id, gate.title)
    EVALUATORS[gate.id](plan, state, snapshot, result)
    return result


def extra_checks(plan: Plan, state: WaveState, snapshot: Snapshot) -> list[GateResult]:
    """Evidence that has no in-cluster Job: claims on allowed nodes, cleanup, phantom nodes."""
    placement = GateResult("claim-placement", "claims are allocated only on nodes this wave declares DRA")
    cleanup = GateResult("cleanup", "no claim is reserved for a pod that no longer exists")
    phantom = GateResult(
        "spec-nodes-exist", "every node the spec names exists (a misspelt SSA Node would be a phantom)"
    )
    if _need(placement, snapshot, "resourceclaims"):
        dra = set(node_names(plan, state, "dra"))
        for claim in snapshot.items("resourceclaims") or []:
            for node in _claim_nodes(claim):
                where = ", ".join(
                    f"{r.get('driver')}/{r.get('pool')}/{r.get('device')}" for r in _results(claim)
                )
                if node in dra:
                    placement.proof.append(f"claim {_name(claim)}: {where}")
                else:
                    placement.broken(f"claim {_name(claim)} is allocated on {node} ({where})")
    if _need(cleanup, snapshot, "resourceclaims", "pods"):
        uids = {p["metadata"].get("uid") for p in snapshot.items("pods") or []}
        for claim in snapshot.items("resourceclaims") or []:
            for consumer in (claim.get("status") or {}).get("reservedFor") or []:
                if consumer.get("resource") == "pods" and consumer.get("uid") not in uids:
                    cleanup.broken(
                        f"claim {_name(claim)} is reserved for pod {consumer.get('name')}, which no longer exists"
                    )
    if _need(phantom, snapshot, "nodes"):
        present = {n["metadata"]["name"] for n in snapshot.items("nodes") or []}
        for pool in plan.platform.node_pools:
            for name in pool.nodes:
                if name not in present:
                    phantom.broken(f"node {name} of pool {pool.name} is not in the cluster")
    return [placement, cleanup, phantom]


def evaluate_wave(plan: Plan, state: WaveState, snapshot: Snapshot) -> list[GateResult]:
    """Every gate of the wave and the evidence-only checks, in report order."""
    return [evaluate_gate(g, plan, state, snapshot) for g in gates_for_wave(plan, state)] + extra_checks(
        plan, state, snapshot
    )
