"""The CEL selectors the NIM Operator writes into the claim templates it creates, byte for byte.

Reproduces NVIDIA/k8s-nim-operator v3.1.2 (`versions.NIM_OPERATOR_MODELLED`):
`internal/shared/resourceclaims.go: GetDRADeviceCELExpressions` always starts with
`device.driver == "<driverName>"`, then one expression per attribute and capacity selector built by
`internal/k8sutil/cel/cel.go: BuildExpr` (Go `%q` strings, `resource.Quantity.String()` values), or
the `celExpressions` verbatim; `manifests/resourceclaimtemplate.yaml` writes each unquoted
(`expression: {{ . }}`), so the API server receives what YAML reads from that line. The tenant
admission policy allows exactly these strings, so NIM claims pass by construction.
"""

from __future__ import annotations

import math

import yaml

from gpuplatform.cel.quantity import parse_quantity
from gpuplatform.model.workloads import AttributeSelector, CapacitySelector, NimService

__all__ = [
    "NIM_DRIVER",
    "attribute_expression",
    "canonical_quantity",
    "capacity_expression",
    "go_quote",
    "operator_selectors",
]

NIM_DRIVER = "gpu.nvidia.com"
_OPS = {
    "Equal": "==",
    "NotEqual": "!=",
    "GreaterThan": ">",
    "GreaterThanOrEqual": ">=",
    "LessThan": "<",
    "LessThanOrEqual": "<=",
}
_ESCAPES = {"\a": r"\a", "\b": r"\b", "\f": r"\f", "\n": r"\n", "\r": r"\r", "\t": r"\t", "\v": r"\v"}
_BINARY = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_DECIMAL = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}


def go_quote(text: str) -> str:
    """Go's `strconv.Quote` (what `%q` prints): double quotes, escapes for the unprintable."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'


def _strip(value: int, base: int) -> tuple[int, int]:
    times = 0
    while value and value % base == 0:
        value //= base
        times += 1
    return value, times


def canonical_quantity(text: str) -> str:
    """`resource.Quantity.String()`: the canonical spelling the operator writes (`1024Mi` -> `1Gi`)."""
    value = parse_quantity(text).value
    if value == 0:
        return "0"
    binary = text.endswith("i")
    exponent_form = "e" in text.lower() and not binary
    if binary and abs(value) >= 1024 and value.denominator == 1:
        amount, times = _strip(int(value), 1024)
        if times < len(_BINARY):
            return f"{amount}{_BINARY[times]}"
    amount, exponent = int(value * 10**9), -9
    amount, times = _strip(amount, 10)
    exponent += times
    remainder = int(math.fmod(exponent, 3))
    if remainder in (1, -2):
        amount, exponent = amount * 10, exponent - 1
    elif remainder in (2, -1):
        amount, exponent = amount * 100, exponent - 2
    if exponent_form or exponent not in _DECIMAL:
        return f"{amount}e{exponent}" if exponent else str(amount)
    return f"{amount}{_DECIMAL[exponent]}"


def _key(kind: str, key: str, driver: str) -> str:
    domain, sep, name = key.partition("/")
    if not sep:
        domain, name = driver, key
    return f"device.{kind}[{go_quote(domain)}].{name}"


def attribute_expression(selector: AttributeSelector, driver: str = NIM_DRIVER) -> str | None:
    """`BuildExpr` of one attribute selector; None where the operator refuses the operator for the type."""
    op, value = _OPS[selector.op], selector.value
    kind = selector.value_type or (
        "bool" if isinstance(value, bool) else "int" if isinstance(value, int) else "string"
    )
    attr = _key("attributes", selector.key, driver)
    if kind == "version":
        return f"({attr}).compareTo(semver({go_quote(str(value))})) {op} 0"
    if kind == "int":
        return f"{attr} {op} {int(value)}"
    if selector.op not in ("Equal", "NotEqual"):
        return None
    literal = ("true" if value else "false") if kind == "bool" else go_quote(str(value))
    return f"{attr} {op} {literal}"


def capacity_expression(selector: CapacitySelector, driver: str = NIM_DRIVER) -> str:
    """`BuildExpr` of one capacity selector (the quantity in its canonical spelling)."""
    attr = _key("capacity", selector.key, driver)
    return (
        f"({attr}).compareTo(quantity({go_quote(canonical_quantity(selector.value))})) {_OPS[selector.op]} 0"
    )


def _as_written(expression: str) -> str | None:
    """What the API server reads from the operator's unquoted `expression: <expr>` line."""
    try:
        value = yaml.safe_load(f"expression: {expression}")
    except yaml.YAMLError:
        return None
    read = value.get("expression") if isinstance(value, dict) else None
    return read if isinstance(read, str) else None


def operator_selectors(nim: NimService) -> list[str]:
    """The selector expressions of the template the operator creates for a claimCreationSpec service."""
    expressions = [f"device.driver == {go_quote(NIM_DRIVER)}"]
    if nim.cel_expressions:
        expressions += nim.cel_expressions
    else:
        expressions += [e for e in map(attribute_expression, nim.attribute_selectors) if e is not None]
        expressions += [capacity_expression(s) for s in nim.capacity_selectors]
    return [w for w in map(_as_written, expressions) if w is not None]
