"""What Kubernetes and Argo CD decide, re-stated small for the real-tool tests (each cites its source).

Independent of the package's own helpers on purpose: the tests judge the package's output.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Any

__all__ = ["may_bind", "permitted", "rbac_covers", "schedulable", "tolerated"]


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


def _atoms(rule: Mapping[str, Any]) -> list[tuple[str, str, str, str | None]]:
    names: Sequence[str | None] = rule.get("resourceNames") or [None]
    return [
        (g, r, v, n)
        for g in rule.get("apiGroups", [])
        for r in rule.get("resources", [])
        for v in rule["verbs"]
        for n in names
    ]


def _allows(rule: Mapping[str, Any], atom: tuple[str, str, str, str | None]) -> bool:
    group, resource, verb, name = atom
    return (
        any(g in ("*", group) for g in rule.get("apiGroups", []))
        and any(r in ("*", resource) for r in rule.get("resources", []))
        and any(v in ("*", verb) for v in rule["verbs"])
        and (not rule.get("resourceNames") or name in rule["resourceNames"])
    )


def rbac_covers(held: Sequence[Mapping[str, Any]], rule: Mapping[str, Any]) -> bool:
    """Whether rules `held` grant everything `rule` does (k8s.io/component-helpers auth/rbac
    validation `Covers`: each (group, resource, verb, name) of the rule allowed by some held rule; a
    rule for any name is covered only by a rule for any name)."""
    return all(any(_allows(h, atom) for h in held) for atom in _atoms(rule))


def may_bind(
    held: Sequence[Mapping[str, Any]], role_kind: str, role: str, rules: Sequence[Mapping[str, Any]]
) -> bool:
    """Whether an identity holding `held` may create a binding to `role` (k8s.io/kubernetes
    pkg/registry/rbac/escalation_check.go `BindingAuthorized`, then `ConfirmNoEscalation`): `bind`
    on that role, or every rule of it held."""
    resource = "clusterroles" if role_kind == "ClusterRole" else "roles"
    atom = ("rbac.authorization.k8s.io", resource, "bind", role)
    return any(_allows(h, atom) for h in held) or all(rbac_covers(held, r) for r in rules)
