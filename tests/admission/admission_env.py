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
