"""Runtime values and functions: standard CEL, strings ext, regex, lists, sets, quantity, semver."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import re2  # type: ignore[import-untyped]

from gpuplatform.cel.literals import Uint
from gpuplatform.cel.quantity import Quantity, QuantityError, parse_quantity
from gpuplatform.cel.semver import Semver, SemverError, parse_semver

__all__ = ["FUNCTIONS", "EvalError", "cel_equals", "go_type_name", "type_name"]

_I64 = 2**63
_U64 = 2**64


class EvalError(Exception):
    """A CEL runtime error value, raised through the interpreter."""


def no_overload(*_: object) -> EvalError:
    return EvalError("no such overload")


def type_name(value: object) -> str:
    """The CEL type name of a runtime value."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, Uint):
        return "uint"
    names = {int: "int", float: "double", str: "string", bytes: "bytes", list: "list", dict: "map"}
    for cls, name in names.items():
        if isinstance(value, cls):
            return name
    if isinstance(value, Quantity):
        return "kubernetes.Quantity"
    if isinstance(value, Semver):
        return "kubernetes.Semver"
    return "null_type" if value is None else type(value).__name__


def go_type_name(value: object) -> str:
    """The Go type cel-go names in iteration errors (`types.Int`, `cel.Semver`)."""
    name = type_name(value)
    special = {
        "kubernetes.Quantity": "cel.Quantity",
        "kubernetes.Semver": "cel.Semver",
        "null_type": "types.Null",
    }
    return special.get(name, "types." + name.capitalize())


def _is_num(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def cel_equals(a: object, b: object) -> bool:
    """Heterogeneous CEL equality; Kubernetes' Quantity and Semver reject other types."""
    if isinstance(a, Quantity | Semver):
        if type(a) is not type(b):
            raise no_overload()
        return a == b
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _is_num(a) and _is_num(b):
        return a == b
    if type_name(a) != type_name(b):
        return False
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(cel_equals(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(cel_equals(a[k], b[k]) for k in a)
    return a == b


def _check_int(v: int) -> int:
    if not -_I64 <= v < _I64:
        raise EvalError("integer overflow")
    return v


def _arith(op: str, a: Any, b: Any) -> Any:
    if op == "+" and type_name(a) == type_name(b) and isinstance(a, str | bytes | list):
        return a + b
    if not (_is_num(a) and _is_num(b)) or type_name(a) != type_name(b):
        raise no_overload()
    if isinstance(a, float):
        if op == "/":
            return a / b if b else math.copysign(math.inf, a) if a else math.nan
        return {"+": a + b, "-": a - b, "*": a * b}.get(op) if op != "%" else _raise(no_overload())
    if op in "/%" and b == 0:
        raise EvalError("division by zero" if op == "/" else "modulus by zero")
    if op == "/":
        result = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
    elif op == "%":
        result = abs(a) % abs(b) * (1 if a >= 0 else -1)
    else:
        result = {"+": a + b, "-": a - b, "*": a * b}[op]
    if isinstance(a, Uint):
        if not 0 <= result < _U64:
            raise EvalError("unsigned integer overflow")
        return Uint(result)
    return _check_int(result)


def _raise(err: Exception) -> Any:
    raise err


def compare(a: Any, b: Any) -> int:
    """Order two values (numbers across types, strings, bytes, bools); error otherwise."""
    same = type_name(a) == type_name(b) and isinstance(a, str | bytes | bool)
    if not (same or (_is_num(a) and _is_num(b))):
        raise no_overload()
    return int(a > b) - int(a < b)


def _list(v: Any) -> list[Any]:
    if not isinstance(v, list):
        raise no_overload()
    return v


def _str(v: Any) -> str:
    if not isinstance(v, str):
        raise no_overload()
    return v


def _int(v: Any) -> int:
    if not isinstance(v, int) or isinstance(v, bool):
        raise no_overload()
    return v


def _q(v: Any) -> Quantity:
    if not isinstance(v, Quantity):
        raise no_overload()
    return v


def _sv(v: Any) -> Semver:
    if not isinstance(v, Semver):
        raise no_overload()
    return v


def _ordered(v: Any, o: Any) -> int:
    if isinstance(v, Quantity) and isinstance(o, Quantity):
        return (v.value > o.value) - (v.value < o.value)
    if isinstance(v, Semver) and isinstance(o, Semver):
        return (v > o) - (v < o)
    raise no_overload()


def _quantity(text: Any) -> Quantity:
    try:
        return parse_quantity(_str(text))
    except QuantityError as exc:
        raise EvalError(str(exc)) from None


def _is_quantity(text: Any) -> bool:
    try:
        parse_quantity(_str(text))
    except QuantityError:
        return False
    return True


def _semver(text: Any, tolerant: Any = False) -> Semver:
    try:
        return parse_semver(_str(text), bool(tolerant))
    except SemverError as exc:
        raise EvalError(str(exc)) from None


def _is_semver(text: Any, tolerant: Any = False) -> bool:
    try:
        parse_semver(_str(text), bool(tolerant))
    except SemverError:
        return False
    return True


def _q_arith(q: Any, other: Any, sign: int) -> Quantity:
    delta = _q(other).value if isinstance(other, Quantity) else Fraction(_int(other))
    return Quantity(_q(q).value + sign * delta)


def _as_integer(q: Any) -> int:
    if not _q(q).is_integer():
        raise EvalError("cannot convert value to integer")
    return int(q.value)


def _size(v: Any) -> int:
    if not isinstance(v, str | bytes | list | dict):
        raise no_overload()
    return len(v)


def _to_int(v: Any) -> int:
    if isinstance(v, str):
        try:
            return _check_int(int(v, 10))
        except ValueError:
            raise EvalError(f"cannot convert {v!r} to int") from None
    if isinstance(v, float):
        if not math.isfinite(v) or not -_I64 <= v < _I64:
            raise EvalError("double out of range for int")
        return int(v)
    return _check_int(_int(v))


def _to_string(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, bytes):
        return v.decode("utf-8")
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, int | str):
        return str(v)
    raise no_overload()


def _index_of(s: Any, sub: Any, start: Any = 0, *, last: bool = False) -> int:
    if isinstance(s, list):
        idx = [i for i, x in enumerate(s) if cel_equals(x, sub)]
        return (idx[-1] if last else idx[0]) if idx else -1
    text, needle, offset = _str(s), _str(sub), _int(start)
    if not 0 <= offset <= len(text):
        raise EvalError(f"index out of range: {offset}")
    if last:
        return text.rfind(needle, 0, (offset + len(needle)) if start else len(text))
    return text.find(needle, offset)


def _substring(s: Any, start: Any, end: Any = None) -> str:
    text, lo = _str(s), _int(start)
    hi = len(text) if end is None else _int(end)
    if not 0 <= lo <= len(text) or not 0 <= hi <= len(text) or lo > hi:
        raise EvalError(f"index out of range: {lo if not 0 <= lo <= len(text) else hi}")
    return text[lo:hi]


def _char_at(s: Any, i: Any) -> str:
    text, idx = _str(s), _int(i)
    if not 0 <= idx <= len(text):
        raise EvalError(f"index out of range: {idx}")
    return text[idx : idx + 1]


def _split(s: Any, sep: Any, n: Any = -1) -> list[str]:
    text, separator, limit = _str(s), _str(sep), _int(n)
    if limit == 0:
        return []
    if separator == "":
        chars = list(text)
        return (
            chars if limit < 0 or limit >= len(chars) else [*chars[: limit - 1], "".join(chars[limit - 1 :])]
        )
    return text.split(separator, limit - 1 if limit > 0 else -1)


def _replace(s: Any, old: Any, new: Any, n: Any = -1) -> str:
    return _str(s).replace(_str(old), _str(new), _int(n))


def _join(items: Any, sep: Any = "") -> str:
    return _str(sep).join(_str(x) for x in _list(items))


def _regex(pattern: Any) -> Any:
    try:
        return re2.compile(_str(pattern))
    except re2.error as exc:
        raise EvalError(f"invalid regex: {exc}") from None


def _find_all(s: Any, pattern: Any, n: Any = -1) -> list[str]:
    found = [m.group(0) for m in _regex(pattern).finditer(_str(s))]
    limit = _int(n)
    return found if limit < 0 else found[:limit]


def _lists_sum(items: Any) -> Any:
    values = _list(items)
    if not values:
        return 0
    total = values[0]
    for v in values[1:]:
        total = _arith("+", total, v)
    return total


def _lists_extreme(items: Any, sign: int, name: str) -> Any:
    values = _list(items)
    if not values:
        raise EvalError(f"{name} called on empty list")
    best = values[0]
    for v in values[1:]:
        if compare(v, best) * sign > 0:
            best = v
    return best


def _is_sorted(items: Any) -> bool:
    values = _list(items)
    return all(compare(a, b) <= 0 for a, b in itertools.pairwise(values))


def _quote(s: Any) -> str:
    escapes = {
        "\\": "\\\\",
        '"': '\\"',
        "\a": "\\a",
        "\b": "\\b",
        "\f": "\\f",
        "\n": "\\n",
        "\r": "\\r",
        "\t": "\\t",
        "\v": "\\v",
    }
    return '"' + "".join(escapes.get(c, c) for c in _str(s)) + '"'


def _includes(target: Any, arg: Any) -> bool:
    if isinstance(target, list):
        if len(target) > 48:
            raise EvalError("'includes' function cannot be applied to lists longer than 48 values")
        return any(_safe_equals(item, arg) for item in target)
    return _safe_equals(target, arg)


def _safe_equals(a: Any, b: Any) -> bool:
    try:
        return cel_equals(a, b)
    except EvalError:
        return False


def _sets(kind: str) -> Callable[[Any, Any], bool]:
    def run(a: Any, b: Any) -> bool:
        left, right = _list(a), _list(b)
        inside = [any(_safe_equals(x, y) for y in left) for x in right]
        if kind == "contains":
            return all(inside)
        if kind == "intersects":
            return any(inside)
        return all(inside) and all(any(_safe_equals(x, y) for y in right) for x in left)

    return run


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "size": _size,
    "int": _to_int,
    "uint": lambda v: (
        Uint(int(v)) if _is_num(v) and 0 <= v < _U64 else _raise(EvalError("uint out of range"))
    ),
    "double": lambda v: float(v) if _is_num(v) or isinstance(v, str) else _raise(no_overload()),
    "string": _to_string,
    "bytes": lambda v: v.encode() if isinstance(v, str) else v,
    "bool": lambda v: v if isinstance(v, bool) else {"true": True, "false": False}[_str(v)],
    "dyn": lambda v: v,
    "contains": lambda s, sub: _str(sub) in _str(s),
    "startsWith": lambda s, p: _str(s).startswith(_str(p)),
    "endsWith": lambda s, p: _str(s).endswith(_str(p)),
    "matches": lambda s, p: _regex(p).search(_str(s)) is not None,
    "find": lambda s, p: m.group(0) if (m := _regex(p).search(_str(s))) else "",
    "findAll": _find_all,
    "isSorted": _is_sorted,
    "sum": _lists_sum,
    "min": lambda v: _lists_extreme(v, -1, "min"),
    "max": lambda v: _lists_extreme(v, 1, "max"),
    "indexOf": _index_of,
    "lastIndexOf": lambda s, sub, start=0: _index_of(s, sub, start, last=True),
    "quantity": _quantity,
    "isQuantity": _is_quantity,
    "sign": lambda q: (_q(q).value > 0) - (q.value < 0),
    "isInteger": lambda q: _q(q).is_integer(),
    "asInteger": _as_integer,
    "asApproximateFloat": lambda q: _q(q).as_approximate_float(),
    "add": lambda q, o: _q_arith(q, o, 1),
    "sub": lambda q, o: _q_arith(q, o, -1),
    "isLessThan": lambda a, b: _ordered(a, b) < 0,
    "isGreaterThan": lambda a, b: _ordered(a, b) > 0,
    "compareTo": _ordered,
    "semver": _semver,
    "isSemver": _is_semver,
    "major": lambda v: _sv(v).major,
    "minor": lambda v: _sv(v).minor,
    "patch": lambda v: _sv(v).patch,
    "charAt": _char_at,
    "lowerAscii": lambda s: "".join(c.lower() if c.isascii() else c for c in _str(s)),
    "upperAscii": lambda s: "".join(c.upper() if c.isascii() else c for c in _str(s)),
    "trim": lambda s: _str(s).strip(
        " \t\n\r\v\f\u0085\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
        "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
    ),
    "substring": _substring,
    "replace": _replace,
    "split": _split,
    "join": _join,
    "strings.quote": _quote,
    "sets.contains": _sets("contains"),
    "sets.intersects": _sets("intersects"),
    "sets.equivalent": _sets("equivalent"),
    "includes": _includes,
}
ARITH = _arith
