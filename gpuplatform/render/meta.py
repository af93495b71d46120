"""The one helper that shapes every rendered object: key order and the common labels."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from gpuplatform.labels import LIFECYCLE_LABEL, WAVE_LABEL

__all__ = [
    "ENGINE_ANNOTATION_DOMAINS",
    "IGNORE_EXTRANEOUS",
    "KEPT_UNTIL_NEXT_WAVE",
    "MANAGED_BY",
    "NEVER_DELETE_ANNOTATIONS",
    "Obj",
    "file_name",
    "for_engines",
    "for_every_wave",
    "k8s_object",
    "order_keys",
    "restricted_security_context",
]

Obj = dict[str, Any]

MANAGED_BY = "app.kubernetes.io/managed-by"
KEPT_UNTIL_NEXT_WAVE = {LIFECYCLE_LABEL: "until-next-wave"}
#: Argo CD leaves a live object that Git no longer holds out of the Application's sync status only
#: with this annotation: one that is never pruned (`Prune=false`) would otherwise keep the Application
#: OutOfSync for ever once a rollback removes it from Git, and self-heal re-sync it endlessly
#: (argo-cd v3.5.1 docs/user-guide/sync-options.md "No Prune Resources", docs/user-guide/
#: compare-options.md; controller/state.go `CompareAppState`, `needsPruning`).
IGNORE_EXTRANEOUS = {"argocd.argoproj.io/compare-options": "IgnoreExtraneous"}
#: Argo CD and Flux must never prune or delete these objects (Nodes, tenant Namespaces).
NEVER_DELETE_ANNOTATIONS = {
    "argocd.argoproj.io/sync-options": "ServerSideApply=true,Prune=false,Delete=false",
    **IGNORE_EXTRANEOUS,
    "kustomize.toolkit.fluxcd.io/prune": "disabled",
    "kustomize.toolkit.fluxcd.io/ssa": "Merge",
}


#: The annotation domain each GitOps engine reads (`argocd.argoproj.io/sync-options`,
#: `kustomize.toolkit.fluxcd.io/prune`): the other engine ignores it.
ENGINE_ANNOTATION_DOMAINS = {"argocd": "argoproj.io", "flux": "fluxcd.io"}


def _foreign(key: str, domains: tuple[str, ...]) -> bool:
    prefix = key.split("/", 1)[0] if "/" in key else ""
    return any(prefix == d or prefix.endswith(f".{d}") for d in domains)


def for_engines(objects: list[Obj], engines: Collection[str]) -> list[Obj]:
    """`objects` without the annotations of an engine the platform is not delivered with: a
    one-engine platform carries its engine's only, a platform with both engines keeps both."""
    foreign = tuple(d for e, d in ENGINE_ANNOTATION_DOMAINS.items() if e not in engines)
    out: list[Obj] = []
    for obj in objects:
        notes = obj.get("metadata", {}).get("annotations")
        if not foreign or not notes or not any(_foreign(k, foreign) for k in notes):
            out.append(obj)
            continue
        kept = {k: v for k, v in notes.items() if not _foreign(k, foreign)}
        meta = {k: v for k, v in obj["metadata"].items() if k != "annotations" or kept}
        if kept:
            meta["annotations"] = kept
        out.append({**obj, "metadata": meta})
    return out


def file_name(obj: Obj) -> str:
    """`<kind>_<name>.yaml`, or `<kind>_<namespace>_<name>.yaml` for namespaced objects."""
    meta = obj["metadata"]
    parts = (
        [obj["kind"], meta["namespace"], meta["name"]] if "namespace" in meta else [obj["kind"], meta["name"]]
    )
    return "_".join(parts).lower() + ".yaml"


def restricted_security_context() -> Obj:
    """A container securityContext of the `restricted` Pod Security profile (non-root, no privileges)."""
    return {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "runAsUser": 65534,
    }


_TOP = ("apiVersion", "kind", "metadata", "spec", "data", "stringData", "rules", "subjects", "roleRef")
_META = ("name", "generateName", "namespace", "labels", "annotations", "finalizers", "ownerReferences")


def _conventional(mapping: Obj, first: tuple[str, ...]) -> Obj:
    """`mapping` with the keys of `first` first, in that order, then the rest sorted."""
    out: Obj = {k: mapping[k] for k in first if k in mapping}
    out.update((k, mapping[k]) for k in sorted(mapping) if k not in out)
    return out


def order_keys(obj: Obj) -> Obj:
    """Top-level keys in Kubernetes' conventional order, metadata keys likewise, the rest sorted."""
    out = _conventional(obj, _TOP)
    meta = out.get("metadata")
    if isinstance(meta, dict):
        ordered = _conventional(meta, _META)
        for key in ("labels", "annotations"):
            if key in ordered:
                ordered[key] = dict(sorted(ordered[key].items()))
        out["metadata"] = ordered
    return out


def k8s_object(
    api_version: str,
    kind: str,
    name: str,
    *,
    wave: str | None,
    namespace: str | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    **body: Any,
) -> Obj:
    """A Kubernetes object carrying `managed-by: gpuplatform` and the wave label (none for an object
    of every wave: `wave` None), its keys in the order `order_keys` gives (built in that order:
    every rendered object passes here)."""
    meta: Obj = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    own = {MANAGED_BY: "gpuplatform"} | ({WAVE_LABEL: wave} if wave is not None else {})
    meta["labels"] = dict(sorted((own | (labels or {})).items()))
    if annotations:
        meta["annotations"] = dict(sorted(annotations.items()))
    return _conventional({"apiVersion": api_version, "kind": kind, "metadata": meta, **body}, _TOP)


def for_every_wave(objects: list[Obj]) -> list[Obj]:
    """`objects` without the wave label: the objects of `delivery/` serve every wave, so a wave PR
    changes only what the wave changes there (the entry's paths), not every object's label."""
    for obj in objects:
        obj["metadata"].get("labels", {}).pop(WAVE_LABEL, None)
    return objects


def cluster_identity(
    account: str, namespace: str, role: str, rules: list[Obj], *, wave: str, **account_fields: Any
) -> list[Obj]:
    """A ServiceAccount bound to a ClusterRole of `rules` (role and binding named `role`)."""
    return [
        k8s_object("v1", "ServiceAccount", account, wave=wave, namespace=namespace, **account_fields),
        k8s_object("rbac.authorization.k8s.io/v1", "ClusterRole", role, wave=wave, rules=rules),
        k8s_object(
            "rbac.authorization.k8s.io/v1",
            "ClusterRoleBinding",
            role,
            wave=wave,
            subjects=[{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
            roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        ),
    ]
