"""A small ValidatingAdmissionPolicy evaluator for tests, on cel-python.

Modelled: `object`, `oldObject`, `request` (userInfo), `namespaceObject`, `variables` (in order),
`matchConditions` (all must be true for the policy to apply) and `validations`. Not modelled: the
`authorizer` variable, `params`/paramKind, `messageExpression`, `auditAnnotations`, CEL cost limits,
and the Kubernetes CEL libraries beyond standard CEL (the policies only use standard CEL).
"""

from __future__ import annotations

from typing import Any

import celpy

_ENV = celpy.Environment()


def _eval(expression: str, activation: dict[str, Any]) -> Any:
    return _ENV.program(_ENV.compile(expression)).evaluate(activation)


def admit(
    policy: dict[str, Any],
    obj: dict[str, Any] | None,
    *,
    user: str = "jane",
    groups: tuple[str, ...] = (),
    old: dict[str, Any] | None = None,
    namespace: dict[str, Any] | None = None,
) -> list[str]:
    """The messages of the validations that fail (empty: admitted)."""
    spec = policy["spec"]
    activation: dict[str, Any] = {
        "object": celpy.json_to_cel(obj),
        "oldObject": celpy.json_to_cel(old),
        "request": celpy.json_to_cel(
            {
                "userInfo": {"username": user, "groups": list(groups)},
                "operation": "UPDATE" if old is not None else "CREATE",
            }
        ),
        "namespaceObject": celpy.json_to_cel(namespace),
    }
    for condition in spec.get("matchConditions", []):
        if not _eval(condition["expression"], activation):
            return []
    variables: dict[str, Any] = {}
    for variable in spec.get("variables", []):
        value = _eval(variable["expression"], {**activation, "variables": celpy.celtypes.MapType(variables)})
        variables[celpy.celtypes.StringType(variable["name"])] = value
    activation["variables"] = celpy.celtypes.MapType(variables)
    return [v["message"] for v in spec["validations"] if not _eval(v["expression"], activation)]


_RESOURCES = {
    "ResourceClaim": "resourceclaims",
    "ResourceClaimTemplate": "resourceclaimtemplates",
    "Namespace": "namespaces",
}


def _selects(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """A LabelSelector (matchLabels, matchExpressions In/NotIn/Exists/DoesNotExist) over `labels`."""
    if selector is None:
        return True
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for e in selector.get("matchExpressions") or []:
        key, op, values = e["key"], e["operator"], e.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def _matches(policy: dict[str, Any], resource: str, operation: str) -> bool:
    rules = policy["spec"]["matchConstraints"]["resourceRules"]
    return any(resource in r["resources"] and operation in r["operations"] for r in rules)


def admission(
    objects: list[dict[str, Any]],
    obj: dict[str, Any],
    *,
    namespace: str | None = None,
    user: str = "jane",
    groups: tuple[str, ...] = (),
    old: dict[str, Any] | None = None,
    subresource: str = "",
) -> list[str]:
    """Every denial the rendered policies and bindings give one request (empty: admitted).

    Models the chain the API server runs: a binding applies when its `namespaceSelector` selects
    the namespace's labels (`kubernetes.io/metadata.name` is always set); its policy applies when a
    resource rule names the resource (`resource/subresource`) and the operation; then `admit`.
    """
    resource = _RESOURCES[obj["kind"]] + (f"/{subresource}" if subresource else "")
    operation = "UPDATE" if old is not None else "CREATE"
    labels = {"kubernetes.io/metadata.name": namespace} if namespace else {}
    policies = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ValidatingAdmissionPolicy"}
    denials = []
    for binding in (o for o in objects if o["kind"] == "ValidatingAdmissionPolicyBinding"):
        match = binding["spec"].get("matchResources") or {}
        if namespace is not None and not _selects(match.get("namespaceSelector"), labels):
            continue
        policy = policies[binding["spec"]["policyName"]]
        if _matches(policy, resource, operation):
            denials += admit(policy, obj, user=user, groups=groups, old=old)
    return denials
