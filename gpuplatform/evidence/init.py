"""`gpuplatform init`: a starting spec from a running cluster — every GPU node legacy.

Node pools come from the GPU Feature Discovery and MIG manager labels (`evidence/gfd.py`: product,
`nvidia.com/gpu.count`, MIG devices, `nvidia.com/mig.config`): static nodes grouped by product,
count and MIG layout, provisioner-managed nodes (Karpenter, EKS/GKE/AKS node groups) by their
provisioner, as provisioner pools; a GPU count or MIG layout that is guessed carries a `# TODO`; the workloads come
from the register; what only a person can decide (tiers, waves, the chart mirror, the
Git repository) is marked `# TODO` with a valid placeholder, so the file loads as it is. The
placeholder waves convert the workloads before any pool is on DRA: `check` and `synth` refuse that
(GP280, GP290: they would have nowhere to run) until the waves are decided.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from gpuplatform.errors import InputError, Problem
from gpuplatform.evidence.gfd import NodeGpus, read_node
from gpuplatform.evidence.register import workload_rows
from gpuplatform.gates.nodes import PROVISIONER_LABELS
from gpuplatform.inventory.catalog import product_for_label
from gpuplatform.kube.nodes import INSTANCE_TYPE_LABEL
from gpuplatform.kueue.evidence import kueue_section
from gpuplatform.kueue.model import QUEUED_KINDS
from gpuplatform.labels import GPU_COUNT_LABEL, GPU_PRODUCT_LABEL
from gpuplatform.load.documents import API_VERSION, PLATFORM_KIND
from gpuplatform.model.base import is_dns_label, is_dns_subdomain, label_value_problem
from gpuplatform.model.workloads import Workload
from gpuplatform.output.yaml import dump_yaml
from gpuplatform.snapshot.read import Snapshot
from gpuplatform.versions import DRA_DRIVER_DEFAULT

__all__ = ["initial_spec"]

_WORKLOAD_KINDS = set(Workload.model_fields["kind"].annotation.__args__)  # type: ignore[union-attr]
#: The most GPUs a MIG node is guessed to have (an 8-GPU HGX board).
_MAX_GUESS = 8
#: The release written when the snapshot gives none (with a TODO).
DEFAULT_KUBERNETES = "1.36.1"
_CHART = re.compile(r"^gpu-operator-v?(\d+\.\d+\.\d+)")
_COMMENTS = {
    "  draDriver:": "  # The chart comes from where it is published; set chartRepository to use a mirror.",
    "  delivery:": "  # TODO: the Git repository Argo CD or Flux reads dist/ from.",
    "  tiers:": "  # TODO: decide the service tiers (DeviceClasses) tenants will request; full-gpu is a start.",
    "  waves:": "  # TODO: decide the waves: give pools a migratesIn wave (pilot-pool, then scale) and workloads theirs "
    "(until then the workloads convert before any pool is on DRA: check refuses it, GP280).",
    "  workloads:": "  # From the register: every workload that requests nvidia.com/gpu today (movesIn is a placeholder).",
    "  tenantPolicy:": "  # TODO: declare tenants for these namespaces; until then claims there are not restricted.",
    "  tenants:": "  # The namespaces of Kueue's LocalQueues. TODO: give each its tiers, groups and quota.",
    "  kueue:": "  # From the snapshot's ClusterQueues, LocalQueues and ResourceFlavors (docs/kueue.md).",
}


def _slug(text: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return (slug or "gpu")[:50].strip("-")


def _product(label: str) -> str:
    """The catalog key of a GFD product label, or the label itself when the catalog lacks it."""
    found = product_for_label(label)
    return found.key if found is not None else label


def _gpus(node: NodeGpus) -> tuple[int, list[str]]:
    """GPUs per node for the spec, and the TODO notes when they are guessed."""
    if node.gpus is not None and not node.guessed:
        return node.gpus, []
    if node.gpus is not None:
        return node.gpus, [f"TODO: gpusPerNode is read from {node.guessed[0]}; check it."]
    if node.mig_devices:
        counts = [n for _, n in node.mig_devices]
        guess = max(g for g in range(1, _MAX_GUESS + 1) if all(n % g == 0 for n in counts))
        return guess, [
            f"TODO: gpusPerNode {guess} is a guess: {node.guessed[-1]}; set the node's GPUs "
            f"(mig.config {node.mig_config or '<none>'}, mig.strategy {node.mig_strategy or '<none>'})."
        ]
    return 1, [f"TODO: no {GPU_COUNT_LABEL} label or allocatable GPUs: gpusPerNode 1 is a placeholder."]


@dataclass
class _Group:
    """GPU nodes that become one pool: a provisioner's group, or static nodes of one product and layout."""

    provisioner: tuple[str, str, str | None] | None
    nodes: list[tuple[str, NodeGpus]] = field(default_factory=list)

    def most(self, of: Callable[[NodeGpus], Any]) -> Any:
        return Counter(of(n) for _, n in self.nodes).most_common(1)[0][0]


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
        gpus = read_node(labels, node.get("status", {}).get("allocatable") or {})
        if not gpus.product and not gpus.gpus and not gpus.mig_devices:
            continue
        owner = _provisioner(labels)
        key = (
            ("provisioner", owner[0], owner[1])
            if owner
            else ("static", gpus.product, str(gpus.gpus), gpus.mig_summary(), gpus.mig_config)
        )
        groups.setdefault(key, _Group(owner)).nodes.append((node["metadata"]["name"], gpus))
    return [groups[k] for k in sorted(groups)]


def _pools(
    snapshot: Snapshot,
) -> tuple[list[dict[str, Any]], dict[str, list[str]], dict[str, list[str]]]:
    """The node pools, the comments to write above each, and the nodes of each (by pool name)."""
    pools: list[dict[str, Any]] = []
    notes: dict[str, list[str]] = {}
    members: dict[str, list[str]] = {}
    seen: set[str] = set()
    types = {
        str(n["metadata"]["name"]): str((n["metadata"].get("labels") or {}).get(INSTANCE_TYPE_LABEL, ""))
        for n in snapshot.items("nodes") or []
    }
    for group in _groups(snapshot):
        first: NodeGpus = group.most(lambda n: n)
        label = group.most(lambda n: n.product) or "unknown"
        gpus, comments = _gpus(first)
        layout = replace(first, gpus=gpus).mig_layout() if first.mig_devices else None
        name = _slug(group.provisioner[1] if group.provisioner else label)
        if first.mig_devices:
            name = f"{name}-mig"
        if name in seen:
            name = f"{name}-x{gpus}"
        seen.add(name)
        pool: dict[str, Any] = {"name": name}
        if group.provisioner is None:
            pool["nodes"] = sorted(n for n, _ in group.nodes)
        else:
            kind, group_name, cloud = group.provisioner
            pool["provisioner"] = {"kind": kind, "name": group_name, **({"cloud": cloud} if cloud else {})}
            where = f"{cloud.upper()} node group" if cloud else kind.capitalize() + " NodePool"
            nodes = ", ".join(sorted(n for n, _ in group.nodes))
            comments.insert(
                0, f"{where} {group_name}: its nodes ({nodes} today) are found by label, not by name."
            )
        pool |= {"product": _product(label), "gpusPerNode": gpus}
        found = sorted({types.get(n, "") for n, _ in group.nodes} - {""})
        if len(found) == 1 and label_value_problem(found[0]) is None:
            pool["instanceType"] = found[0]
        elif len(found) > 1:
            comments.append(
                f"TODO: the nodes are of instance types {', '.join(found)}; a pool has one (instanceType)."
            )
        if layout:
            pool["migLayout"] = list(layout)
            comments.append(
                f"TODO: migLayout is read from GFD's MIG device counts ({first.mig_summary()}) over {gpus} GPU(s); "
                f"the MIG manager applies mig.config {first.mig_config or '<none>'}."
            )
        elif first.mig_devices:
            comments.append(
                f"TODO: the nodes carry MIG devices ({first.mig_summary()}, mig.config "
                f"{first.mig_config or '<none>'}): set migLayout to the profiles of one GPU."
            )
        shapes = sorted({_shape(n) for _, n in group.nodes} - {_shape(first)})
        if shapes:
            comments.append(
                f"TODO: the group also has {', '.join(shapes)}; a pool has one product, GPU count and MIG layout."
            )
        if product_for_label(label) is None:
            comments.append(
                f"TODO: {label} is not in the GPU catalog (`check` cannot model it: GP301); name a catalog product."
            )
        pools.append(pool)
        notes[name] = comments
        members[name] = sorted(n for n, _ in group.nodes)
    return pools, notes, members


def _shape(node: NodeGpus) -> str:
    """How a node differs from its group's most common node, for a TODO."""
    parts = [node.product or "no product label", f"{node.gpus if node.gpus is not None else '?'} GPU(s)"]
    if node.mig_devices:
        parts.append(f"MIG {node.mig_summary()}")
    return " ".join(parts)


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
    pools, pool_notes, members = _pools(snapshot)
    if not pools:
        raise InputError.single(
            str(snapshot.folder), "nodes", f"no GPU node found (no {GPU_PRODUCT_LABEL} label or GPUs)"
        )
    kueue = kueue_section(snapshot, members)
    workloads = []
    for r in workload_rows(snapshot):
        if r.kind not in _WORKLOAD_KINDS or r.gpus <= 0:
            continue
        entry: dict[str, Any] = {
            "kind": r.kind,
            "namespace": r.namespace,
            "name": r.name,
            "gpus": max(r.gpus, 1),
            "replicas": max(r.pods, 1),
            "tier": "full-gpu",
            "movesIn": "application",
        }
        if r.queue and r.kind in QUEUED_KINDS and kueue.local_queues.get(r.namespace) == r.queue:
            entry["queue"] = r.queue
            kueue.notes.append(
                f"TODO: {r.kind} {r.namespace}/{r.name} goes through LocalQueue {r.queue}: `check` refuses "
                "its movesIn (GP402, GP290) until the waves move enough of its ClusterQueue's pools to DRA and "
                "publish its tier (GP261) before it."
            )
        elif r.queue:
            kueue.notes.append(
                f"TODO: {r.kind} {r.namespace}/{r.name} is submitted to LocalQueue {r.queue}, which this "
                "section does not render there: its workload entry has no queue."
            )
        workloads.append(entry)
    operator: dict[str, Any] = {}
    version = _operator_version(snapshot)
    if version is not None:
        operator["version"] = version
    kubernetes, guessed = _kubernetes_version(snapshot)
    spec: dict[str, Any] = {
        "domain": domain,
        "kubernetes": {"version": kubernetes},
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
        **(
            {"tenants": [{"name": ns, "tiers": ["full-gpu"]} for ns in kueue.namespaces]}
            if kueue.namespaces
            else {}
        ),
        **({"workloads": workloads} if workloads else {}),
        **({"kueue": kueue.kueue} if kueue.kueue else {}),
        **(
            {"tenantPolicy": {"allowNamespaces": sorted({w["namespace"] for w in workloads})}}
            if workloads
            else {}
        ),
    }
    doc = {"apiVersion": API_VERSION, "kind": PLATFORM_KIND, "metadata": {"name": name}, "spec": spec}
    lines = [
        _comment(f"Starting spec for {name}, written by `gpuplatform init` from {snapshot.folder}.", ""),
        "# Every GPU node is legacy; provisioner-managed nodes are grouped by their provisioner.",
    ]
    section = ""
    for line in dump_yaml(doc).splitlines():
        if re.match(r"^  [a-zA-Z]+:", line):
            section = line.strip()
        if line in _COMMENTS:
            lines.append(_COMMENTS[line])
        if line == "  kueue:":
            lines += [_comment(n) for n in kueue.notes]
        if line == "  kubernetes:" and guessed:
            lines.append(_comment(guessed))
        pool = (
            line.removeprefix("  - name: ")
            if section == "nodePools:" and line.startswith("  - name: ")
            else None
        )
        lines += [_comment(c) for c in pool_notes.get(pool or "", [])]
        lines.append(line)
    return "\n".join(lines) + "\n"


#: Characters that end a YAML comment (a line break in YAML 1.1 or 1.2) or that no comment should hold.
_BREAKS = re.compile("[\x00-\x1f\x7f\x85\u2028\u2029]")


def _comment(text: str, indent: str = "  ") -> str:
    """`text` as one YAML comment line: a value read from the snapshot (a label, a folder name) that
    holds a line break is written escaped (`\\n`), so it cannot end the comment and add YAML."""
    return f"{indent}# " + _BREAKS.sub(lambda m: json.dumps(m.group())[1:-1], text)


_RELEASE = re.compile(r"^v?(\d+\.\d+\.\d+)")


def _kubernetes_version(snapshot: Snapshot) -> tuple[str, str]:
    """The cluster's release and, when it is not the API server's own, the TODO that says why: the
    manifest's `serverVersion` (`gpuplatform snapshot`), else the newest `status.nodeInfo.kubeletVersion`
    of the nodes (plain `kubectl get -o json` files; the control plane may be newer, never older:
    kubernetes version skew policy), else a placeholder."""
    manifest = snapshot.manifest or {}
    server = manifest.get("serverVersion")
    found = _RELEASE.match(server if isinstance(server, str) else "")
    if found:
        return found.group(1), ""
    kubelets = set()
    for node in snapshot.items("nodes") or []:
        info = (node.get("status") or {}).get("nodeInfo") or {}
        match = _RELEASE.match(str(info.get("kubeletVersion") or ""))
        if match:
            kubelets.add(match.group(1))
    if kubelets:
        newest = max(kubelets, key=lambda v: tuple(int(p) for p in v.split(".")))
        return newest, (
            f"TODO: version {newest} is the newest kubeletVersion of the nodes ({', '.join(sorted(kubelets))}); "
            "the API server may be newer: set the control plane's release (`kubectl version`)."
        )
    return DEFAULT_KUBERNETES, (
        f"TODO: the snapshot gives no server or kubelet version: {DEFAULT_KUBERNETES} is a placeholder; "
        "set the control plane's release (`kubectl version`)."
    )
