"""`init`'s `kueue:` section: the GPU ClusterQueues of a snapshot as `spec.kueue` declares them.

A ClusterQueue becomes a `clusterQueues[]` entry when a LocalQueue points at it (its tenants are the
LocalQueues' namespaces) and it holds `nvidia.com/gpu` quota: each flavor's `nominalQuota` goes to the
pool the flavor's `nodeLabels` select (every GPU node they match is in that one pool); a flavor that
selects no pool, or several, is a `# TODO`. The release is read from the kueue-controller-manager
pod's image tag (`registry.k8s.io/kueue/kueue:v0.19.2`, as kubernetes-sigs/kueue v0.19.2
config/components/manager and charts/kueue ship it), else the default with a `# TODO`. The queue's
other resources (cpu, memory, ...) become its `resources`, summed over its flavors: the rendered queue
replaces the team's, and Kueue admits no Job asking for a resource its queue does not cover.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from gpuplatform.labels import GPU_RESOURCE, NVIDIA_RESOURCE_PREFIX
from gpuplatform.model.base import is_dns_label, is_dns_subdomain, label_key_problem
from gpuplatform.snapshot.read import Snapshot
from gpuplatform.versions import KUEUE_DEFAULT

__all__ = ["KueueSection", "kueue_section"]

_IMAGE = re.compile(r"^(?:.+/)?kueue:v?(\d+\.\d+\.\d+)(?:@.*)?$")
_AMOUNT = re.compile(r"^(\d{1,15})(|m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)$")


@dataclass
class KueueSection:
    """The `kueue:` mapping, its `# TODO` notes, the tenants it names, and LocalQueue per namespace."""

    kueue: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    namespaces: list[str] = field(default_factory=list)
    local_queues: dict[str, str] = field(default_factory=dict)
    """namespace -> the LocalQueue name the section renders there (a workload's valid `queue`)."""


def _version(snapshot: Snapshot) -> tuple[str, str | None]:
    """(release, namespace) of the running Kueue, from its controller's image tag."""
    for pod in snapshot.items("pods") or []:
        for container in pod.get("spec", {}).get("containers") or []:
            match = _IMAGE.match(str(container.get("image", "")))
            if match:
                return match.group(1), pod["metadata"].get("namespace")
    return "", None


def _quota(value: Any) -> int | None:
    text = str(value)
    return int(text) if text.isascii() and text.isdigit() and int(text) < 2**31 else None


def _total(amounts: list[str]) -> str | None:
    """The sum of whole quantities with one suffix (`64` + `32`, `128Gi` + `64Gi`); None otherwise."""
    found = [_AMOUNT.match(a) for a in amounts]
    suffixes = {m.group(2) for m in found if m is not None}
    if None in found or len(suffixes) != 1:
        return None
    return f"{sum(int(m.group(1)) for m in found if m is not None)}{suffixes.pop()}"


def _other_resources(name: str, spec: dict[str, Any], notes: list[str]) -> dict[str, str]:
    """The queue's quotas of resources other than GPUs, each summed over its flavors."""
    amounts: dict[str, list[str]] = {}
    for group in spec.get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            for resource in flavor.get("resources") or []:
                key = str(resource.get("name", ""))
                if key and not key.startswith(NVIDIA_RESOURCE_PREFIX):
                    amounts.setdefault(key, []).append(str(resource.get("nominalQuota")))
    out: dict[str, str] = {}
    for key, values in sorted(amounts.items()):
        total = _total(values)
        if total is None or label_key_problem(key) is not None:
            notes.append(
                f"TODO: ClusterQueue {name} holds {key} {' + '.join(values)}: declare it in resources."
            )
            continue
        out[key] = total
    return out


def _flavor_pools(snapshot: Snapshot, members: dict[str, list[str]]) -> dict[str, tuple[str | None, str]]:
    """flavor -> (the pool its nodeLabels select, or None, and why not)."""
    labels = {n["metadata"]["name"]: n["metadata"].get("labels") or {} for n in snapshot.items("nodes") or []}
    pool_of = {node: pool for pool, nodes in members.items() for node in nodes}
    out: dict[str, tuple[str | None, str]] = {}
    for flavor in snapshot.items("resourceflavors") or []:
        selector = (flavor.get("spec") or {}).get("nodeLabels") or {}
        matched = [
            n
            for n, have in labels.items()
            if n in pool_of and all(have.get(k) == v for k, v in selector.items())
        ]
        pools = sorted({pool_of[n] for n in matched})
        text = ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or "no nodeLabels"
        if len(pools) == 1 and selector:
            out[flavor["metadata"]["name"]] = (pools[0], "")
        else:
            why = f"selects GPU nodes of pools {', '.join(pools)}" if pools else "selects no GPU node"
            out[flavor["metadata"]["name"]] = (None, f"its nodeLabels ({text}) {why}")
    return out


def kueue_section(snapshot: Snapshot, members: dict[str, list[str]]) -> KueueSection:
    """The section for the snapshot's GPU ClusterQueues (`kueue` None when it has none);
    `members` is pool name -> node names."""
    section = KueueSection()
    queues = snapshot.items("clusterqueues") or []
    if not queues:
        return section
    flavors = _flavor_pools(snapshot, members)
    local: dict[str, list[tuple[str, str]]] = {}
    for lq in snapshot.items("localqueues") or []:
        meta = lq["metadata"]
        target = str((lq.get("spec") or {}).get("clusterQueue", ""))
        local.setdefault(target, []).append((str(meta.get("namespace", "")), str(meta["name"])))
    taken: set[str] = set()
    entries: list[dict[str, Any]] = []
    for cq in sorted(queues, key=lambda q: str(q["metadata"]["name"])):
        name = str(cq["metadata"]["name"])
        spec = cq.get("spec") or {}
        quotas: dict[str, int] = {}
        gpu = False
        for group in spec.get("resourceGroups") or []:
            for flavor in group.get("flavors") or []:
                for resource in flavor.get("resources") or []:
                    if resource.get("name") != GPU_RESOURCE:
                        continue
                    gpu = True
                    pool, why = flavors.get(str(flavor.get("name")), (None, "no such ResourceFlavor"))
                    n = _quota(resource.get("nominalQuota"))
                    if pool is None or n is None:
                        why = why or f"nominalQuota {resource.get('nominalQuota')!r} is not a whole number"
                        section.notes.append(
                            f"TODO: ClusterQueue {name} holds {resource.get('nominalQuota')} {GPU_RESOURCE} "
                            f"on flavor {flavor.get('name')}, which maps to no pool: {why}."
                        )
                        continue
                    quotas[pool] = quotas.get(pool, 0) + n
        if not gpu:
            continue
        submitters = sorted(
            (ns, lq) for ns, lq in local.get(name, []) if ns not in taken and is_dns_label(ns)
        )
        lq_names = sorted({lq for _, lq in submitters})
        if not submitters or not is_dns_subdomain(name):
            section.notes.append(
                f"TODO: ClusterQueue {name} holds {GPU_RESOURCE} but no LocalQueue of a namespace of "
                "its own points at it: declare its tenants to plan its quota."
            )
            continue
        if not quotas:
            quotas = {next(iter(members)): 0}
            section.notes.append(
                f"TODO: ClusterQueue {name}'s {GPU_RESOURCE} quota maps to no pool: quotas is a placeholder."
            )
        entry: dict[str, Any] = {"name": name}
        if spec.get("cohortName") and is_dns_label(str(spec["cohortName"])):
            entry["cohort"] = str(spec["cohortName"])
        entry["tenants"] = [ns for ns, _ in submitters]
        default = name if "." not in name else "gpu"
        if len(lq_names) == 1 and lq_names[0] != default and is_dns_label(lq_names[0]):
            entry["localQueue"] = lq_names[0]
        elif len(lq_names) > 1:
            section.notes.append(
                f"TODO: the LocalQueues of ClusterQueue {name} have several names ({', '.join(lq_names)}); "
                f"the tool renders one per namespace ({default})."
            )
        lq = entry.get("localQueue", default)
        for ns, _ in submitters:
            taken.add(ns)
            section.local_queues[ns] = lq
        entry["quotas"] = quotas
        if others := _other_resources(name, spec, section.notes):
            entry["resources"] = others
        entries.append(entry)
    if not entries:
        return section
    version, namespace = _version(snapshot)
    kueue: dict[str, Any] = {"version": version or KUEUE_DEFAULT}
    if not version:
        section.notes.insert(
            0,
            f"TODO: no kueue-controller-manager image tag in the snapshot: version {KUEUE_DEFAULT} is a placeholder.",
        )
    if namespace and namespace != "kueue-system" and is_dns_label(namespace):
        kueue["namespace"] = namespace
    kueue["clusterQueues"] = entries
    section.kueue = kueue
    section.namespaces = sorted(taken)
    return section
