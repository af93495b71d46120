"""`gpuplatform init`: a starting spec from a running cluster — every GPU node legacy.

Node pools come from the GPU Feature Discovery labels (`nvidia.com/gpu.product`, mapped to the
catalog, and `.count`): static nodes grouped by product and count, provisioner-managed nodes
(Karpenter, EKS/GKE/AKS node groups) by their provisioner, as provisioner pools; the workloads come
from the register; what only a person can decide (tiers, waves, the chart mirror, the
Git repository) is marked `# TODO` with a valid placeholder, so the file synthesises as it is.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from gpuplatform.errors import InputError, Problem
from gpuplatform.evidence.register import PRODUCT_LABEL, workload_rows
from gpuplatform.evidence.snapshot import Snapshot
from gpuplatform.gates.matchers import GPU_RESOURCE
from gpuplatform.gates.nodes import PROVISIONER_LABELS
from gpuplatform.inventory.catalog import product_for_label
from gpuplatform.load.documents import API_VERSION, PLATFORM_KIND
from gpuplatform.model.base import is_dns_label, is_dns_subdomain
from gpuplatform.model.workloads import Workload
from gpuplatform.output.yaml import dump_yaml
from gpuplatform.versions import DRA_DRIVER_DEFAULT

__all__ = ["initial_spec"]

_WORKLOAD_KINDS = set(Workload.model_fields["kind"].annotation.__args__)  # type: ignore[union-attr]
_CHART = re.compile(r"^gpu-operator-v?(\d+\.\d+\.\d+)")
_COMMENTS = {
    "  draDriver:": "  # The chart comes from where it is published; set chartRepository to use a mirror.",
    "  delivery:": "  # TODO: the Git repository Argo CD or Flux reads dist/ from.",
    "  tiers:": "  # TODO: decide the service tiers (DeviceClasses) tenants will request; full-gpu is a start.",
    "  waves:": "  # TODO: decide the waves: give pools a migratesIn wave (pilot-pool, then scale) and workloads theirs.",
    "  workloads:": "  # From the register: every workload that requests nvidia.com/gpu today (movesIn is a placeholder).",
    "  tenantPolicy:": "  # TODO: declare tenants for these namespaces; until then claims there are not restricted.",
}


def _slug(text: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return (slug or "gpu")[:50].strip("-")


def _product(label: str) -> str:
    """The catalog key of a GFD product label, or the label itself when the catalog lacks it."""
    found = product_for_label(label)
    return found.key if found is not None else label


@dataclass
class _Group:
    """GPU nodes that become one pool: a provisioner's group, or static nodes of one product."""

    provisioner: tuple[str, str, str | None] | None
    nodes: list[tuple[str, str, int]] = field(default_factory=list)
    """(node name, GFD product label, GPUs)."""

    def product_label(self) -> str:
        return Counter(label for _, label, _ in self.nodes).most_common(1)[0][0]

    def gpus(self) -> int:
        return Counter(count for _, _, count in self.nodes).most_common(1)[0][0]


def _provisioner(labels: dict[str, str]) -> tuple[str, str, str | None] | None:
    """(kind, group name, cloud) of a provisioner-managed node, from its group label."""
    for (kind, cloud), key in PROVISIONER_LABELS.items():
        if labels.get(key):
            return kind, labels[key], cloud
    return None


def _groups(snapshot: Snapshot) -> list[_Group]:
    groups: dict[tuple[str, ...], _Group] = {}
    for node in snapshot.items("nodes") or []:
        labels = node["metadata"].get("labels") or {}
        allocatable = (node.get("status", {}).get("allocatable") or {}).get(GPU_RESOURCE, "0")
        count = int(labels.get("nvidia.com/gpu.count") or allocatable or 0)
        if not labels.get(PRODUCT_LABEL) and count == 0:
            continue
        label = labels.get(PRODUCT_LABEL, "unknown")
        owner = _provisioner(labels)
        key = ("provisioner", owner[0], owner[1]) if owner else ("static", label, str(max(count, 1)))
        groups.setdefault(key, _Group(owner)).nodes.append((node["metadata"]["name"], label, max(count, 1)))
    return [groups[k] for k in sorted(groups)]


def _pools(snapshot: Snapshot) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    """The node pools, and the comments to write above each (by pool name)."""
    pools: list[dict[str, Any]] = []
    notes: dict[str, list[str]] = {}
    seen: set[str] = set()
    for group in _groups(snapshot):
        label, gpus = group.product_label(), group.gpus()
        name = _slug(group.provisioner[1] if group.provisioner else label)
        if name in seen:
            name = f"{name}-x{gpus}"
        seen.add(name)
        pool: dict[str, Any] = {"name": name}
        comments: list[str] = []
        if group.provisioner is None:
            pool["nodes"] = sorted(n for n, _, _ in group.nodes)
        else:
            kind, group_name, cloud = group.provisioner
            pool["provisioner"] = {"kind": kind, "name": group_name, **({"cloud": cloud} if cloud else {})}
            where = f"{cloud.upper()} node group" if cloud else kind.capitalize() + " NodePool"
            nodes = ", ".join(sorted(n for n, _, _ in group.nodes))
            comments.append(
                f"{where} {group_name}: its nodes ({nodes} today) are found by label, not by name."
            )
        pool |= {"product": _product(label), "gpusPerNode": gpus}
        others = sorted({lb for _, lb, _ in group.nodes} - {label}) + sorted(
            {str(c) for _, _, c in group.nodes} - {str(gpus)}
        )
        if others:
            comments.append(
                f"TODO: the group also has {', '.join(others)}; a pool has one product and GPU count."
            )
        if product_for_label(label) is None:
            comments.append(
                f"TODO: {label} is not in the GPU catalog (`check` cannot model it: GP301); name a catalog product."
            )
        pools.append(pool)
        notes[name] = comments
    return pools, notes


def _operator_version(snapshot: Snapshot) -> str | None:
    for pod in snapshot.items("pods") or []:
        match = _CHART.match((pod["metadata"].get("labels") or {}).get("helm.sh/chart", ""))
        if match:
            return match.group(1)
    return None


def _check_options(name: str, domain: str) -> None:
    """Refuse, before reading the cluster, a name or domain the spec's model refuses."""
    problems = []
    if not is_dns_label(name):
        problems.append(
            Problem("--name", "", "", f"{name!r} is not a DNS label (the platform's metadata.name)")
        )
    if not is_dns_subdomain(domain):
        problems.append(Problem("--domain", "", "", f"{domain!r} is not a DNS subdomain (the spec's domain)"))
    if problems:
        raise InputError(problems)


def initial_spec(snapshot: Snapshot, name: str, domain: str) -> str:
    """The starting spec as YAML text with `# TODO` comments."""
    _check_options(name, domain)
    pools, pool_notes = _pools(snapshot)
    if not pools:
        raise InputError.single(
            str(snapshot.folder), "nodes", "no GPU node found (no nvidia.com/gpu.product label or GPUs)"
        )
    workloads = [
        {
            "kind": r.kind,
            "namespace": r.namespace,
            "name": r.name,
            "gpus": max(r.gpus, 1),
            "replicas": max(r.pods, 1),
            "tier": "full-gpu",
            "movesIn": "application",
        }
        for r in workload_rows(snapshot)
        if r.kind in _WORKLOAD_KINDS and r.gpus > 0
    ]
    operator: dict[str, Any] = {}
    version = _operator_version(snapshot)
    if version is not None:
        operator["version"] = version
    spec: dict[str, Any] = {
        "domain": domain,
        "kubernetes": {"version": _server_version(snapshot)},
        **({"gpuOperator": operator} if operator else {}),
        "draDriver": {"chartVersion": DRA_DRIVER_DEFAULT},
        "delivery": {"engines": ["argocd"], "repoUrl": "https://git.example.com/platform/gpu.git"},
        "nodePools": pools,
        "tiers": [{"name": "full-gpu", "deviceType": "gpu"}],
        "waves": [
            {"name": "baseline", "stage": "baseline"},
            {"name": "application", "stage": "application"},
            {"name": "final-cutover", "stage": "final-cutover"},
        ],
        "activeWave": "baseline",
        **({"workloads": workloads} if workloads else {}),
        **(
            {"tenantPolicy": {"allowNamespaces": sorted({w["namespace"] for w in workloads})}}
            if workloads
            else {}
        ),
    }
    doc = {"apiVersion": API_VERSION, "kind": PLATFORM_KIND, "metadata": {"name": name}, "spec": spec}
    lines = [
        f"# Starting spec for {name}, written by `gpuplatform init` from {snapshot.folder}.",
        "# Every GPU node is legacy; provisioner-managed nodes are grouped by their provisioner.",
    ]
    section = ""
    for line in dump_yaml(doc).splitlines():
        if re.match(r"^  [a-zA-Z]+:", line):
            section = line.strip()
        if line in _COMMENTS:
            lines.append(_COMMENTS[line])
        pool = (
            line.removeprefix("  - name: ")
            if section == "nodePools:" and line.startswith("  - name: ")
            else None
        )
        lines += [f"  # {c}" for c in pool_notes.get(pool or "", [])]
        lines.append(line)
    return "\n".join(lines) + "\n"


def _server_version(snapshot: Snapshot) -> str:
    manifest = snapshot.manifest or {}
    version = manifest.get("serverVersion")
    version = version if isinstance(version, str) else None
    match = re.match(r"^v?(\d+\.\d+\.\d+)", version or "")
    return match.group(1) if match else "1.36.1"
