"""Plain YAML scalars read the way Helm and Kubernetes read them: sigs.k8s.io/yaml, which embeds
go-yaml v2 (`resolve.go`), then converts to JSON.

What that means, checked against `helm template` (tests/realtools/test_yaml_as_helm.py):

- `10:30`, `1:2:3`, `2026-12-04`, `0o8`, `=`: strings (no YAML 1.1 sexagesimal, no timestamps,
  no value key);
- `y Y yes Yes YES on On ON true True TRUE` and their `n`/`no`/`off`/`false` twins: booleans
  (go-yaml v2 keeps YAML 1.1's words; Helm reads `enabled: yes` as true);
- `~ null Null NULL` and the empty scalar: null;
- a scalar starting with a digit, `+` or `-`: with every `_` removed, an integer as
  `strconv.ParseInt`/`ParseUint` base 0 reads it (`0x1F`, `0o17`, `0b101`, `017` octal,
  `1_000`), else a float if it looks like one (`1e3`, `08`, `1.`), else a string;
  `.5`-like scalars are floats;
- `.inf`, `.nan` and their spellings: not JSON (Helm refuses them); the model refuses them at
  their field.

Mapping keys become strings as sigs.k8s.io/yaml makes them (`true:` is the key "true", `017:` "15",
`1e3:` "1000": `strconv.FormatFloat(key, 'g', -1, 32)`).
"""

from __future__ import annotations

import math
import re
import struct
from functools import lru_cache

__all__ = [
    "BOOL",
    "FLOAT",
    "INT",
    "MERGE",
    "NOT_JSON",
    "NULL",
    "STR",
    "float_key",
    "go_float",
    "go_int",
    "plain_tag",
]

STR = "tag:yaml.org,2002:str"
BOOL = "tag:yaml.org,2002:bool"
INT = "tag:yaml.org,2002:int"
FLOAT = "tag:yaml.org,2002:float"
NULL = "tag:yaml.org,2002:null"
MERGE = "tag:yaml.org,2002:merge"
#: A tag of our own for `.inf`/`.nan`, which JSON cannot hold.
NOT_JSON = "tag:gpuplatform.dev,2026:not-json"

WORDS: dict[str, bool] = {
    **dict.fromkeys(("y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "true", "True", "TRUE"), True),
    **dict.fromkeys(("n", "N", "no", "No", "NO", "off", "Off", "OFF", "false", "False", "FALSE"), False),
}
_NULLS = frozenset(("~", "null", "Null", "NULL"))
_SPECIAL = frozenset(
    f"{sign}.{word}" for sign in ("", "+", "-") for word in ("inf", "Inf", "INF")
) | frozenset((".nan", ".NaN", ".NAN"))
_WORD_START = frozenset("yYnNtTfFoO~")
_NUMBER_START = frozenset("+-0123456789")
#: go-yaml v2's `yamlStyleFloat`.
_STYLE_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
#: What `strconv.ParseFloat` accepts of a scalar starting with `.`.
_DOT_FLOAT = re.compile(r"\.[0-9]+(?:[eE][-+]?[0-9]+)?")
_DIGITS = {
    16: frozenset("0123456789abcdefABCDEF"),
    10: frozenset("0123456789"),
    8: frozenset("01234567"),
    2: frozenset("01"),
}
_PREFIXES = {"0x": 16, "0X": 16, "0o": 8, "0O": 8, "0b": 2, "0B": 2}


def go_int(text: str) -> int | None:
    """`strconv.ParseInt(text, 0, 64)`, else `ParseUint(text, 0, 64)`; None where both fail."""
    sign, body = (text[0], text[1:]) if text[:1] in ("+", "-") else ("", text)
    base = _PREFIXES.get(body[:2], 8 if len(body) > 1 and body[0] == "0" else 10)
    digits = body[2:] if body[:2] in _PREFIXES else body[1:] if base == 8 else body
    if not digits or not set(digits) <= _DIGITS[base]:
        return None
    value = int(digits, base) * (-1 if sign == "-" else 1)
    if -(2**63) <= value < 2**63 or (not sign and value < 2**64):
        return value
    return None


def go_float(text: str) -> float | None:
    """A float as go-yaml v2 reads one (`yamlStyleFloat`, `ParseFloat` in range); None otherwise."""
    if not (_DOT_FLOAT if text[:1] == "." else _STYLE_FLOAT).fullmatch(text):
        return None
    value = float(text)
    return None if math.isinf(value) else value


@lru_cache(maxsize=65536)
def plain_tag(value: str) -> str:
    """The tag go-yaml v2 resolves the plain scalar `value` to (`MERGE` for `<<`)."""
    if not value or value in _NULLS:
        return NULL
    first = value[0]
    if first in _WORD_START:
        return BOOL if value in WORDS else STR
    if value == "<<":
        return MERGE
    if first == ".":
        return NOT_JSON if value in _SPECIAL else FLOAT if go_float(value) is not None else STR
    if first not in _NUMBER_START:
        return STR
    if value in _SPECIAL:
        return NOT_JSON
    plain = value.replace("_", "")
    if go_int(plain) is not None:
        return INT
    return FLOAT if go_float(plain) is not None else STR


def _float32(value: float) -> float:
    result: float = struct.unpack("f", struct.pack("f", value))[0]
    return result


def float_key(value: float) -> str:
    """`strconv.FormatFloat(value, 'g', -1, 32)`: the shortest digits that read back as the same
    float32, in `%e` form when the exponent is below -4 or at least 6."""
    single = _float32(value)
    if single == 0:
        return "-0" if math.copysign(1, single) < 0 else "0"
    if math.isinf(single):  # beyond float32: helm v4.1.4 names the key as YAML writes infinity
        return ".inf" if single > 0 else "-.inf"
    for precision in range(9):
        text = f"{single:.{precision}e}"
        if _float32(float(text)) == single:
            break
    mantissa, exponent = text.split("e")
    sign = "-" if mantissa.startswith("-") else ""
    digits = mantissa.lstrip("-").replace(".", "").rstrip("0") or "0"
    exp = int(exponent)
    if exp < -4 or exp >= 6:
        head = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{head}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    point = exp + 1
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return f"{sign}{digits}{'0' * (point - len(digits))}"
    return f"{sign}{digits[:point]}.{digits[point:]}"
