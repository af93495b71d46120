"""Which nodes a ResourceSlice reaches, as the program's `reaches` reads it: Kubernetes' NodeSelector.

A slice (or, with `perDeviceNodeSelection`, each device) reaches a node by `nodeName`, `allNodes:
true` or `nodeSelector`. The selector's terms are ORed and a term's requirements ANDed; an empty
term, or a requirement Kubernetes would not parse (`In` without values, `Gt` with a value that is
not an int64…), matches nothing (`k8s.io/component-helpers/scheduling/corev1/nodeaffinity`,
`k8s.io/apimachinery/pkg/labels`: `In`, `NotIn`, `Exists`, `DoesNotExist`, `Gt`, `Lt`; fields:
`metadata.name` with `In`/`NotIn` and one value).
"""

from __future__ import annotations

import re
from typing import Any

from gpuplatform.evidence.twins import reading as r

__all__ = ["reaches"]

_INT = re.compile(r"[+-]?[0-9]+")
_INT64 = range(-(2**63), 2**63)


def _int64(value: Any) -> int | None:
    """`strconv.ParseInt(value, 10, 64)`, None where it fails."""
    text = r.text(value)
    if text is None:
        raise r.Unlike("values")
    if not _INT.fullmatch(text):
        return None
    number = int(text)
    return number if number in _INT64 else None


def _label_matches(requirement: Any, labels: dict[str, Any]) -> bool:
    key = r.text(r.field(requirement, "key"))
    if key is None:
        raise r.Unlike("matchExpressions.key")
    values = r.items(r.field(requirement, "values"))
    op = r.field(requirement, "operator")
    has = key in labels
    if op == "In":
        return has and any(v == labels[key] for v in values)
    if op == "NotIn":
        return len(values) > 0 and (not has or all(v != labels[key] for v in values))
    if op in ("Exists", "DoesNotExist"):
        return len(values) == 0 and has == (op == "Exists")
    if op in ("Gt", "Lt") and len(values) == 1 and has:
        bound, value = _int64(values[0]), _int64(labels[key])
        if bound is None or value is None:
            return False
        return value > bound if op == "Gt" else value < bound
    return False


def _field_matches(requirement: Any, node: str) -> bool:
    values = r.items(r.field(requirement, "values"))
    value = node if r.field(requirement, "key") == "metadata.name" else ""
    op = r.field(requirement, "operator")
    return len(values) == 1 and (
        (op == "In" and values[0] == value) or (op == "NotIn" and values[0] != value)
    )


def _selects(selector: Any, labels: dict[str, Any], node: str) -> bool:
    for term in r.items(r.field(selector, "nodeSelectorTerms")):
        expressions = r.items(r.field(term, "matchExpressions"))
        fields = r.items(r.field(term, "matchFields"))
        if (
            (expressions or fields)
            and all(_label_matches(e, labels) for e in expressions)
            and all(_field_matches(f, node) for f in fields)
        ):
            return True
    return False


def reaches(selection: Any, labels: dict[str, Any], node: str) -> bool:
    """`reaches`: a slice's spec (or a device's node selection) makes its devices usable on `node`."""
    if r.field(selection, "nodeName") == node or r.field(selection, "allNodes") is True:
        return True
    selector = r.field(selection, "nodeSelector")
    return selector is not None and _selects(selector, labels, node)
