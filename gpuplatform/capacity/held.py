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
from gpuplatform.capacity.fields import mapping_at, mappings_at
from gpuplatform.evidence.register import spec_workloads, workload_of
from gpuplatform.model.platform import Platform
from gpuplatform.snapshot.read import Snapshot

__all__ = ["Held", "PodClaims", "held_devices", "read_pods"]

POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"


@dataclass(frozen=True)
class Held:
    """Devices held outside the spec's demand, per node, and template claims found per template."""

    pinned: Mapping[str, frozenset[DeviceID]]
    templates: Mapping[tuple[str, str], int]
    """(namespace, template) -> claims made from it that the snapshot holds."""
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Claim:
    """An allocated claim as attribution reads it."""

    namespace: str
    name: str
    annotations: Mapping[str, Any]
    devices: list[DeviceID]
    users: list[str]
    """Pods it is reserved for, or that own it (a claim made from a template)."""


@dataclass(frozen=True)
class PodClaims:
    """A pod and the claim entries of its spec and status."""

    raw: dict[str, Any]
    claims: list[Mapping[str, Any]]
    statuses: list[Mapping[str, Any]]


def _claim(item: Mapping[str, Any], file: str, loc: str) -> _Claim:
    meta = mapping_at(item, "metadata", file, loc)
    results = mappings_at(item, "status.allocation.devices.results", file, loc)
    users = [
        str(r.get("name"))
        for r in mappings_at(item, "status.reservedFor", file, loc)
        if r.get("resource") == "pods"
    ]
    users += [
        str(o.get("name"))
        for o in mappings_at(item, "metadata.ownerReferences", file, loc)
        if o.get("kind") == "Pod"
    ]
    return _Claim(
        str(meta.get("namespace", "")),
        str(meta.get("name", "")),
        mapping_at(item, "metadata.annotations", file, loc),
        [(str(r.get("driver")), str(r.get("pool")), str(r.get("device"))) for r in results],
        list(dict.fromkeys(users)),
    )


def _template_of(claim: _Claim, pod: PodClaims) -> str:
    """The claim template the pod made this claim from ("" when none)."""
    entry_of = {str(s.get("resourceClaimName")): str(s.get("name")) for s in pod.statuses}
    entry = entry_of.get(claim.name) or claim.annotations.get(POD_CLAIM_ANNOTATION)
    for item in pod.claims:
        if item.get("name") == entry and item.get("resourceClaimTemplateName"):
            return str(item["resourceClaimTemplateName"])
    return ""


def read_pods(snapshot: Snapshot, file: str = "") -> dict[tuple[str, str], PodClaims]:
    """(namespace, name) -> the pod (InputError naming the pods file, default the snapshot's
    `pods.json`, and the field of a malformed one)."""
    file = file or str(snapshot.folder / "pods.json")
    out = {}
    for i, item in enumerate(snapshot.items("pods") or ()):
        loc = f"items[{i}]"
        meta = mapping_at(item, "metadata", file, loc)
        pod = PodClaims(
            item,
            mappings_at(item, "spec.resourceClaims", file, loc),
            mappings_at(item, "status.resourceClaimStatuses", file, loc),
        )
        out[(str(meta.get("namespace", "")), str(meta.get("name", "")))] = pod
    return out


def held_devices(
    platform: Platform,
    snapshot: Snapshot,
    slices: list[dict[str, Any]],
    pods: Mapping[tuple[str, str], PodClaims],
) -> Held:
    """The devices claims hold outside the spec's demand; `slices` (normalised) place them on nodes."""
    claims = snapshot.items("resourceclaims")
    if claims is None:
        return Held({}, {}, ("the snapshot has no ResourceClaims: devices already allocated are unknown",))
    owners = spec_workloads(platform)
    templates = {(t.ns, c.name) for t in platform.tenants for c in t.claim_templates}
    node_of = {
        (str(s["spec"]["driver"]), str(s["spec"]["pool"]["name"])): s["spec"].get("nodeName") for s in slices
    }
    file = str(snapshot.folder / "resourceclaims.json")
    pinned: dict[str, set[DeviceID]] = {}
    found: Counter[tuple[str, str]] = Counter()
    held = 0
    for i, item in enumerate(claims):
        claim = _claim(item, file, f"items[{i}]")
        if not claim.devices:
            continue
        users = [pods[(claim.namespace, n)] for n in claim.users if (claim.namespace, n) in pods]
        if any((claim.namespace, *workload_of(pod.raw, snapshot)) in owners for pod in users):
            continue
        template = next((t for t in (_template_of(claim, pod) for pod in users) if t), "")
        if (claim.namespace, template) in templates:
            found[(claim.namespace, template)] += 1
            continue
        held += 1
        for device in claim.devices:
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
