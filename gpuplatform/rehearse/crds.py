"""CustomResourceDefinitions the rehearsal cluster needs before a tree applies: the engines' own
kinds (the runbook reads their status with kubectl) and every custom kind the tree holds.

Upstream CRD files come from a folder given with `--crds` (e.g. the reference CRDs of Argo CD, Flux,
the NIM and GPU Operators), else from the cache of the releases the platform targets
(`upstream.py`); a kind without one gets a CRD that stores the object as written, with a status
subresource. That is a fact of the rehearsal, not of the cluster: the
upstream schemas and their CEL rules are held to the rendered objects by the unit tests.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from gpuplatform.rehearse.client import Obj

__all__ = ["ENGINE_KINDS", "crds_for", "permissive_crd", "read_crds"]

#: The engines' kinds: (group, version, kind, plural, namespaced).
ENGINE_KINDS: tuple[tuple[str, str, str, str], ...] = (
    ("kustomize.toolkit.fluxcd.io", "v1", "Kustomization", "kustomizations"),
    ("source.toolkit.fluxcd.io", "v1", "GitRepository", "gitrepositories"),
    ("source.toolkit.fluxcd.io", "v1", "HelmRepository", "helmrepositories"),
    ("source.toolkit.fluxcd.io", "v1", "OCIRepository", "ocirepositories"),
    ("helm.toolkit.fluxcd.io", "v2", "HelmRelease", "helmreleases"),
    ("argoproj.io", "v1alpha1", "Application", "applications"),
    ("argoproj.io", "v1alpha1", "AppProject", "appprojects"),
    ("argoproj.io", "v1alpha1", "ApplicationSet", "applicationsets"),
)
_BUILT_IN_GROUPS = {
    "",
    "v1",
    "apps",
    "batch",
    "policy",
    "rbac.authorization.k8s.io",
    "admissionregistration.k8s.io",
    "resource.k8s.io",
    "scheduling.k8s.io",
    "storage.k8s.io",
    "networking.k8s.io",
    "coordination.k8s.io",
    "node.k8s.io",
}
_CLUSTER_SCOPED = {
    "ClusterPolicy",
    "ClusterQueue",
    "ResourceFlavor",
    "NodePool",
    "NodeClaim",
    "NVIDIADriver",
    "GPUCluster",
    "Cohort",
}


def _plural(kind: str) -> str:
    lower = kind.lower()
    if lower.endswith("y"):
        return lower[:-1] + "ies"
    if lower.endswith("s"):
        return lower + "es"
    return lower + "s"


def permissive_crd(
    group: str, versions: Iterable[str], kind: str, plural: str, namespaced: bool = True
) -> Obj:
    """A CRD that serves `kind` storing each object as written, with a status subresource."""
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    ordered = sorted(set(versions))
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
            "scope": "Namespaced" if namespaced else "Cluster",
            "versions": [
                {
                    "name": v,
                    "served": True,
                    "storage": v == ordered[-1],
                    "schema": schema,
                    "subresources": {"status": {}},
                }
                for v in ordered
            ],
        },
    }


def read_crds(folders: Iterable[Path]) -> dict[tuple[str, str], Obj]:
    """(group, kind) -> upstream CRD from the `*.yaml` files of `folders` (a later folder wins)."""
    out: dict[tuple[str, str], Obj] = {}
    for folder in folders:
        for path in sorted(folder.glob("*.yaml")) if folder.is_dir() else []:
            for doc in yaml.load_all(path.read_text(), Loader=yaml.CSafeLoader):
                if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                    spec = doc.get("spec") or {}
                    out[(str(spec.get("group")), str((spec.get("names") or {}).get("kind")))] = doc
    return out


def crds_for(objects: Iterable[Obj], upstream: dict[tuple[str, str], Obj]) -> list[Obj]:
    """The CRDs that make every engine kind and every custom kind of `objects` apply."""
    wanted: dict[tuple[str, str], tuple[set[str], str, bool]] = {
        (g, k): ({v}, p, True) for g, v, k, p in ENGINE_KINDS
    }
    for obj in objects:
        api = str(obj.get("apiVersion", ""))
        group, _, version = api.rpartition("/")
        if group in _BUILT_IN_GROUPS or not group:
            continue
        kind = str(obj.get("kind"))
        versions, plural, namespaced = wanted.get(
            (group, kind), (set(), _plural(kind), kind not in _CLUSTER_SCOPED)
        )
        wanted[(group, kind)] = (versions | {version}, plural, namespaced)
    out: list[Obj] = []
    for (group, kind), (versions, plural, namespaced) in sorted(wanted.items()):
        crd: Any = upstream.get((group, kind))
        if crd is not None and versions <= {v.get("name") for v in crd["spec"].get("versions") or []}:
            out.append(crd)
        else:
            out.append(permissive_crd(group, versions, kind, plural, namespaced))
    return out
