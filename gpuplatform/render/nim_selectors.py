"""The NIM Operator's selector CEL per spec path, for `check` to compile and count devices with.

The strings are exactly those `render/nim_cel.py` says the operator writes (NVIDIA/k8s-nim-operator
`internal/k8sutil/cel/cel.go`): bool and string values allow only Equal/NotEqual; ints compare
directly; versions and quantities through `compareTo(semver(..) | quantity(..)) <op> 0`.
"""

from __future__ import annotations

from gpuplatform.model.workloads import NimService
from gpuplatform.render.nim_cel import NIM_DRIVER, attribute_expression, capacity_expression

__all__ = ["NIM_DRIVER", "nim_expressions"]


def nim_expressions(nim: NimService, loc: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(spec path, CEL) of the service's request selectors, and (spec path, why) of refused ones."""
    expressions = [(f"{loc}.celExpressions[{i}]", e) for i, e in enumerate(nim.cel_expressions)]
    refused = []
    for i, selector in enumerate(nim.attribute_selectors):
        where = f"{loc}.attributeSelectors[{i}]"
        cel = attribute_expression(selector)
        if cel is None:
            refused.append(
                (where, f"operator {selector.op} is not allowed for a {type(selector.value).__name__} value")
            )
        else:
            expressions.append((where, cel))
    expressions += [
        (f"{loc}.capacitySelectors[{i}]", capacity_expression(s))
        for i, s in enumerate(nim.capacity_selectors)
    ]
    return expressions, refused
