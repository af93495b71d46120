"""Devices a snapshot's ResourceClaims already hold, and which of them the spec's demand accounts for.

The scheduler treats every device of every allocated claim as in use (k8s.io/dynamic-resource-
allocation structured allocator: its `allocatedDevices`; Karpenter v1.14.1 gathers them the same
way, pkg/controllers/provisioning/provisioner.go `gatherAllocatedDevices`). Capacity places the
spec's demand afresh in every moment, so claims that belong to it must not be counted twice:

- a claim reserved for, or owned by, a pod of a spec workload or NIM service is that demand;
- a claim made from a tenant's claim template (in the tenant's namespace) is that template's
  demand, which then counts at least as many claims as the snapshot holds.

Every other allocated claim (other teams, admin claims, claims of pods the spec does not name,
claims no pod uses any more) holds its devices on its node in every moment.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpuplatform.capacity.allocator import DeviceID
from gpuplatform.evidence.register import workload_of
from gpuplatform.evidence.snapshot import Snapshot
from gpuplatform.model.platform import Platform

__all__ = ["Held", "held_devices"]

POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"


@dataclass(frozen=True)
class Held:
    """Devices held outside the spec's demand, per node, and template claims found per template."""

    pinned: Mapping[str, frozenset[DeviceID]]
    templates: Mapping[tuple[str, str], int]
    """(namespace, template) -> claims made from it that the snapshot holds."""
    notes: tuple[str, ...] = ()


def _results(claim: Mapping[str, Any]) -> list[DeviceID]:
    allocation = (claim.get("status") or {}).get("allocation") or {}
    return [
        (str(r.get("driver")), str(r.get("pool")), str(r.get("device")))
        for r in (allocation.get("devices") or {}).get("results") or ()
    ]


def _pods_of(
    claim: Mapping[str, Any], pods: Mapping[tuple[str, str], dict[str, Any]]
) -> list[dict[str, Any]]:
    """Pods the claim is reserved for, or the pod that owns it (a claim made from a template)."""
    namespace = str((claim.get("metadata") or {}).get("namespace", ""))
    names = [
        str(r.get("name"))
        for r in (claim.get("status") or {}).get("reservedFor") or ()
        if r.get("resource") == "pods"
    ]
    names += [
        str(o.get("name"))
        for o in (claim.get("metadata") or {}).get("ownerReferences") or ()
        if o.get("kind") == "Pod"
    ]
    return [pods[(namespace, n)] for n in dict.fromkeys(names) if (namespace, n) in pods]


def _template_of(claim: Mapping[str, Any], pod: Mapping[str, Any]) -> str:
    """The claim template the pod made this claim from ("" when none)."""
    meta = claim.get("metadata") or {}
    name = str(meta.get("name", ""))
    entry_of = {
        str(s.get("resourceClaimName")): str(s.get("name"))
        for s in (pod.get("status") or {}).get("resourceClaimStatuses") or ()
    }
    entry = entry_of.get(name) or (meta.get("annotations") or {}).get(POD_CLAIM_ANNOTATION)
    for item in (pod.get("spec") or {}).get("resourceClaims") or ():
        if item.get("name") == entry and item.get("resourceClaimTemplateName"):
            return str(item["resourceClaimTemplateName"])
    return ""


def held_devices(platform: Platform, snapshot: Snapshot, slices: list[dict[str, Any]]) -> Held:
    """The devices claims hold outside the spec's demand; `slices` (normalised) place them on nodes."""
    claims = snapshot.items("resourceclaims")
    if claims is None:
        return Held({}, {}, ("the snapshot has no ResourceClaims: devices already allocated are unknown",))
    pods = {
        (str(p["metadata"].get("namespace", "")), str(p["metadata"].get("name", ""))): p
        for p in snapshot.items("pods") or ()
    }
    owners = {(w.namespace, str(w.kind), w.name) for w in platform.workloads}
    owners |= {(n.namespace, "Deployment", n.name) for n in platform.nim_services}
    templates = {(t.ns, c.name) for t in platform.tenants for c in t.claim_templates}
    node_of = {
        (str(s["spec"]["driver"]), str(s["spec"]["pool"]["name"])): s["spec"].get("nodeName") for s in slices
    }
    pinned: dict[str, set[DeviceID]] = {}
    found: Counter[tuple[str, str]] = Counter()
    held = 0
    for claim in claims:
        devices = _results(claim)
        if not devices:
            continue
        namespace = str((claim.get("metadata") or {}).get("namespace", ""))
        users = _pods_of(claim, pods)
        if any((namespace, *workload_of(pod, snapshot)) in owners for pod in users):
            continue
        template = next((t for t in (_template_of(claim, pod) for pod in users) if t), "")
        if (namespace, template) in templates:
            found[(namespace, template)] += 1
            continue
        held += 1
        for device in devices:
            node = node_of.get(device[:2])
            if node:
                pinned.setdefault(str(node), set()).add(device)
    notes = []
    if held:
        count = sum(len(d) for d in pinned.values())
        notes.append(f"{count} device(s) held by {held} allocated claim(s) the spec does not model: not free")
    if claims and snapshot.items("pods") is None:
        notes.append("the snapshot has no pods: every allocated claim counts as held outside the spec")
    return Held({n: frozenset(d) for n, d in pinned.items()}, dict(found), tuple(notes))
