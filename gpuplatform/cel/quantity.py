"""Kubernetes resource.Quantity as an exact CEL value (`quantity("1Gi") == quantity("1024Mi")`)."""

from __future__ import annotations

import functools
import math
import re
from fractions import Fraction

__all__ = ["Quantity", "QuantityError", "parse_quantity"]

#: Matched whole (`fullmatch`: "1Gi\n" is refused) with ASCII digits only, as apimachinery's
#: `parseQuantityString` reads bytes '0'-'9' and refuses an unknown suffix such as "Gi\n"
#: (k8s.io/apimachinery pkg/api/resource/quantity.go, vendored by kubernetes-sigs/dra-driver-nvidia-gpu v25.12.0).
_PATTERN = re.compile(
    r"([+-]?)([0-9]+\.?[0-9]*|\.[0-9]+)(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?"
)
_SUFFIX = {
    None: Fraction(1),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}
_INT64 = 2**63


class QuantityError(ValueError):
    """The text is not a Kubernetes quantity."""


@functools.total_ordering
class Quantity:
    """An exact quantity; equality and order compare values, not spellings."""

    __slots__ = ("text", "value")

    def __init__(self, value: Fraction, text: str = "") -> None:
        self.value = value
        self.text = text or _format(value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.value == other.value

    def __lt__(self, other: Quantity) -> bool:
        return self.value < other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"Quantity({self.text!r})"

    def is_integer(self) -> bool:
        """True when the value is a whole number that fits int64 (Kubernetes `AsInt64`)."""
        return self.value.denominator == 1 and -_INT64 <= self.value < _INT64

    def as_approximate_float(self) -> float:
        """The nearest float (Kubernetes `AsApproximateFloat64`)."""
        return float(self.value)


def parse_quantity(text: str) -> Quantity:
    """Parse like `resource.ParseQuantity`: sign, digits, then an SI/binary suffix or exponent."""
    match = _PATTERN.fullmatch(text)
    if not match:
        raise QuantityError(
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        )
    sign, number, exponent, suffix = match.groups()
    value = Fraction(number) * (Fraction(10) ** int(exponent[1:]) if exponent else _SUFFIX[suffix])
    if sign == "-":
        value = -value
    scaled = value * 10**9
    if scaled.denominator != 1:
        value = Fraction(math.ceil(abs(scaled)), 10**9) * (1 if value >= 0 else -1)
    return Quantity(value, text)


def _format(value: Fraction) -> str:
    if value.denominator == 1:
        return str(value.numerator)
    return f"{math.ceil(value * 10**9)}n"
