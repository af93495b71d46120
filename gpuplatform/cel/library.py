"""Declarations of the Kubernetes DRA CEL library: overloads, the release that added them, their cost."""

from __future__ import annotations

from dataclasses import dataclass

from gpuplatform.cel.types import Type, parse_type

__all__ = ["OVERLOADS", "Overload", "overloads_for"]


@dataclass(frozen=True)
class Overload:
    """One signature; `since` is the Kubernetes minor whose base environment added it."""

    function: str
    member: bool
    params: tuple[Type, ...]
    result: Type
    since: int = 0
    cost: str = "fixed"


def _decl(spec: str, since: int = 0, cost: str = "fixed") -> Overload:
    """`"string.lowerAscii() string"` declares a member; `"size(list(A)) int"` a global."""
    sig, result = spec.rsplit(" ", 1)
    depth, open_at = 0, len(sig) - 1
    for open_at in range(len(sig) - 1, -1, -1):
        depth += (sig[open_at] == ")") - (sig[open_at] == "(")
        if depth == 0:
            break
    name, args = sig[:open_at], sig[open_at + 1 : -1]
    params = [parse_type(a) for a in _split(args)]
    member = "." in name and not name.startswith(("strings.", "sets."))
    if member:
        recv, name = name.rsplit(".", 1)
        params.insert(0, parse_type(recv))
    return Overload(name, member, tuple(params), parse_type(result), since, cost)


def _split(text: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur)
    return out


_NUM = ("int", "uint", "double")
_ORDERED = (*_NUM, "string", "bytes", "bool")
_SPECS: list[tuple[str, int, str]] = [
    ("!_(bool) bool", 0, "fixed"),
    ("_&&_(bool, bool) bool", 0, "logical"),
    ("_||_(bool, bool) bool", 0, "logical"),
    ("_?_:_(bool, A, A) A", 0, "conditional"),
    ("-_(int) int", 0, "fixed"),
    ("-_(double) double", 0, "fixed"),
    ("_==_(A, A) bool", 0, "equality"),
    ("_!=_(A, A) bool", 0, "equality"),
    ("@in(A, list(A)) bool", 0, "in_list"),
    ("@in(A, map(A, B)) bool", 0, "fixed"),
    ("_[_](list(A), int) A", 0, "fixed"),
    ("_[_](map(A, B), A) B", 0, "fixed"),
    ("_+_(string, string) string", 0, "concat"),
    ("_+_(bytes, bytes) bytes", 0, "concat"),
    ("_+_(list(A), list(A)) list(A)", 0, "fixed"),
    *[(f"{op}({t}, {t}) {t}", 0, "fixed") for op in ("_+_", "_-_", "_*_", "_/_") for t in _NUM],
    *[(f"_%_({t}, {t}) {t}", 0, "fixed") for t in ("int", "uint")],
    *[
        (f"{op}({t}, {t}) bool", 0, "equality" if t in ("string", "bytes") else "fixed")
        for op in ("_<_", "_<=_", "_>_", "_>=_")
        for t in _ORDERED
    ],
    *[
        (f"{op}({a}, {b}) bool", 28, "fixed")
        for op in ("_<_", "_<=_", "_>_", "_>=_")
        for a in _NUM
        for b in _NUM
        if a != b
    ],
    *[(f"size({t}) int", 0, "fixed") for t in ("string", "bytes", "list(A)", "map(A, B)")],
    *[(f"{t}.size() int", 0, "fixed") for t in ("string", "bytes", "list(A)", "map(A, B)")],
    *[(f"int({t}) int", 0, "fixed") for t in ("int", "uint", "double", "string")],
    *[(f"uint({t}) uint", 0, "fixed") for t in ("int", "uint", "double", "string")],
    *[(f"double({t}) double", 0, "fixed") for t in ("int", "uint", "double", "string")],
    *[(f"string({t}) string", 0, "fixed") for t in ("int", "uint", "double", "string", "bytes", "bool")],
    ("bytes(string) bytes", 0, "fixed"),
    ("bytes(bytes) bytes", 0, "fixed"),
    ("bool(bool) bool", 0, "fixed"),
    ("bool(string) bool", 0, "fixed"),
    ("dyn(A) dyn", 0, "fixed"),
    ("string.contains(string) bool", 0, "contains"),
    ("string.startsWith(string) bool", 0, "prefix"),
    ("string.endsWith(string) bool", 0, "prefix"),
    ("string.matches(string) bool", 0, "regex"),
    ("matches(string, string) bool", 0, "regex"),
    ("string.find(string) string", 0, "regex"),
    ("string.findAll(string) list(string)", 0, "regex"),
    ("string.findAll(string, int) list(string)", 0, "regex"),
    ("list(A).isSorted() bool", 0, "list"),
    *[(f"list({t}).{f}() {t}", 0, "list") for f in ("sum",) for t in _NUM],
    *[(f"list({t}).{f}() {t}", 0, "list") for f in ("min", "max") for t in _ORDERED],
    ("list(A).indexOf(A) int", 0, "list"),
    ("list(A).lastIndexOf(A) int", 0, "list"),
    ("quantity(string) Q", 28, "traverse_arg"),
    ("isQuantity(string) bool", 28, "traverse_arg"),
    ("Q.sign() int", 28, "fixed"),
    ("Q.isInteger() bool", 28, "fixed"),
    ("Q.asInteger() int", 28, "fixed"),
    ("Q.asApproximateFloat() double", 28, "fixed"),
    ("Q.add(Q) Q", 28, "fixed"),
    ("Q.add(int) Q", 28, "fixed"),
    ("Q.sub(Q) Q", 28, "fixed"),
    ("Q.sub(int) Q", 28, "fixed"),
    ("Q.isLessThan(Q) bool", 28, "fixed"),
    ("Q.isGreaterThan(Q) bool", 28, "fixed"),
    ("Q.compareTo(Q) int", 28, "fixed"),
    ("string.charAt(int) string", 29, "traverse"),
    ("string.indexOf(string) int", 29, "traverse"),
    ("string.indexOf(string, int) int", 29, "traverse"),
    ("string.lastIndexOf(string) int", 29, "traverse"),
    ("string.lastIndexOf(string, int) int", 29, "traverse"),
    ("string.lowerAscii() string", 29, "traverse_same"),
    ("string.upperAscii() string", 29, "traverse_same"),
    ("string.trim() string", 29, "traverse_same"),
    ("string.substring(int) string", 29, "traverse_same"),
    ("string.substring(int, int) string", 29, "traverse_same"),
    ("string.replace(string, string) string", 29, "replace"),
    ("string.replace(string, string, int) string", 29, "replace"),
    ("string.split(string) list(string)", 29, "split"),
    ("string.split(string, int) list(string)", 29, "split"),
    ("list(string).join() string", 29, "join"),
    ("list(string).join(string) string", 29, "join"),
    ("strings.quote(string) string", 29, "traverse_arg"),
    ("sets.contains(list(A), list(A)) bool", 29, "sets"),
    ("sets.intersects(list(A), list(A)) bool", 29, "sets"),
    ("sets.equivalent(list(A), list(A)) bool", 29, "sets"),
    ("semver(string) S", 33, "traverse_arg"),
    ("semver(string, bool) S", 33, "traverse_arg"),
    ("isSemver(string) bool", 33, "traverse_arg"),
    ("isSemver(string, bool) bool", 33, "traverse_arg"),
    ("S.major() int", 33, "fixed"),
    ("S.minor() int", 33, "fixed"),
    ("S.patch() int", 33, "fixed"),
    ("S.isLessThan(S) bool", 33, "fixed"),
    ("S.isGreaterThan(S) bool", 33, "fixed"),
    ("S.compareTo(S) int", 33, "fixed"),
]

OVERLOADS: tuple[Overload, ...] = tuple(_decl(spec, since, cost) for spec, since, cost in _SPECS)
INCLUDES = Overload(
    "includes", True, (parse_type("dyn"), parse_type("dyn")), parse_type("bool"), 36, "includes"
)


def overloads_for(library_minor: int, includes: bool) -> dict[str, list[Overload]]:
    """Overloads by function name for a base environment of Kubernetes 1.<library_minor>."""
    table: dict[str, list[Overload]] = {}
    for overload in (*OVERLOADS, *((INCLUDES,) if includes else ())):
        if overload.since <= library_minor or overload is INCLUDES:
            table.setdefault(overload.function, []).append(overload)
    return table
