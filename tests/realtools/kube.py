"""What Kubernetes and Argo CD decide, re-stated small for the real-tool tests (each cites its source).

Independent of the package's own helpers on purpose: the tests judge the package's output.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Any

__all__ = ["permitted", "schedulable", "tolerated"]


def _tolerates(t: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """k8s.io/api core/v1 toleration.go ToleratesTaint."""
    if t.get("effect") and t["effect"] != taint["effect"]:
        return False
    if t.get("key") and t["key"] != taint["key"]:
        return False
    if t.get("operator") == "Exists":
        return True
    return t.get("operator", "Equal") == "Equal" and t.get("value", "") == taint.get("value", "")


def tolerated(tolerations: Sequence[Mapping[str, Any]], taints: Sequence[Mapping[str, Any]]) -> bool:
    """Every NoSchedule/NoExecute taint is tolerated (the scheduler's TaintToleration filter)."""
    hard = [t for t in taints if t["effect"] in ("NoSchedule", "NoExecute")]
    return all(any(_tolerates(t, taint) for t in tolerations) for taint in hard)


def _expression(expr: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, op, values = expr["key"], expr["operator"], expr.get("values", [])
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    raise AssertionError(f"operator {op} not modelled")


def schedulable(
    pod: Mapping[str, Any], labels: Mapping[str, str], taints: Sequence[Mapping[str, Any]]
) -> bool:
    """A DaemonSet pod lands on the node: nodeSelector, required node affinity (terms ORed,
    expressions ANDed), tolerations (k8s.io/component-helpers scheduling/corev1/nodeaffinity)."""
    if any(labels.get(k) != v for k, v in (pod.get("nodeSelector") or {}).items()):
        return False
    required = (
        (pod.get("affinity") or {})
        .get("nodeAffinity", {})
        .get("requiredDuringSchedulingIgnoredDuringExecution")
    )
    if required and not any(
        all(_expression(e, labels) for e in term.get("matchExpressions", []))
        for term in required["nodeSelectorTerms"]
    ):
        return False
    return tolerated(pod.get("tolerations") or [], taints)


def _group(obj: Mapping[str, Any]) -> str:
    api = str(obj["apiVersion"])
    return api.rsplit("/", 1)[0] if "/" in api else ""


def permitted(project: Mapping[str, Any], obj: Mapping[str, Any], server: str, namespaced: bool) -> bool:
    """Whether an AppProject lets an Application on `server` apply `obj` (argoproj/argo-cd v3.5.1
    app_project_types.go IsResourcePermitted, IsGroupKindNamePermitted, IsDestinationPermitted;
    types.go isResourceInList / isNamedResourceInList: globs on group, kind and name)."""
    spec = project["spec"]
    group, kind, meta = _group(obj), obj["kind"], obj["metadata"]
    if namespaced:
        allow = spec.get("namespaceResourceWhitelist")
        if allow is not None and not any(
            fnmatchcase(kind, w["kind"]) and fnmatchcase(group, w["group"]) for w in allow
        ):
            return False
        return any(
            fnmatchcase(server, d.get("server", ""))
            and fnmatchcase(meta["namespace"], d.get("namespace", ""))
            for d in spec.get("destinations", [])
        )
    return any(
        fnmatchcase(kind, w["kind"])
        and fnmatchcase(group, w["group"])
        and (not w.get("name") or fnmatchcase(meta["name"], w["name"]))
        for w in spec.get("clusterResourceWhitelist", [])
    )
