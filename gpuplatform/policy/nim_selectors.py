"""The CEL the NIM Operator builds from a NIMService's attribute and capacity selectors.

Mirrors NVIDIA/k8s-nim-operator `internal/k8sutil/cel/cel.go` (dra-api.md §11): bool and string
values allow only Equal/NotEqual; ints compare directly; versions and quantities through
`compareTo(semver(..) | quantity(..)) <op> 0`. Bare keys belong to the `gpu.nvidia.com` domain.
"""

from __future__ import annotations

from gpuplatform.model.workloads import AttributeSelector, CapacitySelector, NimService
from gpuplatform.render.selectors import cel_string

__all__ = ["NIM_DRIVER", "nim_expressions"]

NIM_DRIVER = "gpu.nvidia.com"
_OPS = {
    "Equal": "==",
    "NotEqual": "!=",
    "GreaterThan": ">",
    "GreaterThanOrEqual": ">=",
    "LessThan": "<",
    "LessThanOrEqual": "<=",
}


def _field(kind: str, key: str) -> str:
    domain, _, name = key.rpartition("/")
    return f"device.{kind}[{cel_string(domain or NIM_DRIVER)}].{name}"


def _attribute(selector: AttributeSelector) -> str | None:
    """One attribute selector as CEL; None where the operator refuses the operator for the type."""
    op, value = _OPS[selector.op], selector.value
    value_type = selector.value_type or (
        "bool" if isinstance(value, bool) else "int" if isinstance(value, int) else "string"
    )
    attr = _field("attributes", selector.key)
    if value_type == "version":
        return f"({attr}).compareTo(semver({cel_string(str(value))})) {op} 0"
    if value_type == "int":
        return f"{attr} {op} {int(value)}"
    if selector.op not in ("Equal", "NotEqual"):
        return None
    literal = ("true" if value else "false") if value_type == "bool" else cel_string(str(value))
    return f"{attr} {op} {literal}"


def _capacity(selector: CapacitySelector) -> str:
    return f"({_field('capacity', selector.key)}).compareTo(quantity({cel_string(selector.value)})) {_OPS[selector.op]} 0"


def nim_expressions(nim: NimService, loc: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(spec path, CEL) of the service's request selectors, and (spec path, why) of refused ones."""
    expressions = [(f"{loc}.celExpressions[{i}]", e) for i, e in enumerate(nim.cel_expressions)]
    refused = []
    for i, selector in enumerate(nim.attribute_selectors):
        where = f"{loc}.attributeSelectors[{i}]"
        cel = _attribute(selector)
        if cel is None:
            refused.append(
                (where, f"operator {selector.op} is not allowed for a {type(selector.value).__name__} value")
            )
        else:
            expressions.append((where, cel))
    expressions += [
        (f"{loc}.capacitySelectors[{i}]", _capacity(s)) for i, s in enumerate(nim.capacity_selectors)
    ]
    return expressions, refused
