"""`gpuplatform init`: a starting spec from a running cluster — every GPU node legacy.

Node pools come from the GPU Feature Discovery labels (`nvidia.com/gpu.product`, `.count`), the
workloads from the register; what only a person can decide (tiers, waves, the chart mirror, the
Git repository) is marked `# TODO` with a valid placeholder, so the file synthesises as it is.
"""

from __future__ import annotations

import re
from typing import Any

from gpuplatform.errors import InputError
from gpuplatform.evidence.register import PRODUCT_LABEL, workload_rows
from gpuplatform.evidence.snapshot import Snapshot
from gpuplatform.gates.matchers import GPU_RESOURCE
from gpuplatform.inventory.catalog import lookup_product
from gpuplatform.load.documents import API_VERSION, PLATFORM_KIND
from gpuplatform.load.yaml_input import read_data
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
    for candidate in (label, label.replace("-", " ")):
        try:
            return lookup_product(candidate).key
        except InputError:
            continue
    return label


def _pools(snapshot: Snapshot) -> list[dict[str, Any]]:
    groups: dict[tuple[str, int], list[str]] = {}
    for node in snapshot.items("nodes") or []:
        labels = node["metadata"].get("labels") or {}
        allocatable = (node.get("status", {}).get("allocatable") or {}).get(GPU_RESOURCE, "0")
        count = int(labels.get("nvidia.com/gpu.count") or allocatable or 0)
        if not labels.get(PRODUCT_LABEL) and count == 0:
            continue
        groups.setdefault((labels.get(PRODUCT_LABEL, "unknown"), max(count, 1)), []).append(
            node["metadata"]["name"]
        )
    pools = []
    seen: set[str] = set()
    for (label, count), nodes in sorted(groups.items()):
        name = _slug(label)
        if name in seen:
            name = f"{name}-x{count}"
        seen.add(name)
        pools.append({"name": name, "nodes": sorted(nodes), "product": _product(label), "gpusPerNode": count})
    return pools


def _operator_version(snapshot: Snapshot) -> str | None:
    for pod in snapshot.items("pods") or []:
        match = _CHART.match((pod["metadata"].get("labels") or {}).get("helm.sh/chart", ""))
        if match:
            return match.group(1)
    return None


def initial_spec(snapshot: Snapshot, name: str, domain: str) -> str:
    """The starting spec as YAML text with `# TODO` comments."""
    pools = _pools(snapshot)
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
        "# Every GPU node is legacy.",
    ]
    for line in dump_yaml(doc).splitlines():
        if line in _COMMENTS:
            lines.append(_COMMENTS[line])
        lines.append(line)
    return "\n".join(lines) + "\n"


def _server_version(snapshot: Snapshot) -> str:
    path = snapshot.folder / "manifest.json"
    manifest = read_data(path) if path.is_file() else None
    version = manifest.get("serverVersion") if isinstance(manifest, dict) else None
    version = version if isinstance(version, str) else None
    match = re.match(r"^v?(\d+\.\d+\.\d+)", version or "")
    return match.group(1) if match else "1.36.1"
