"""Static CEL types for the checker, printed the way cel-go prints them."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ANY",
    "BOOL",
    "BYTES",
    "DOUBLE",
    "DYN",
    "INT",
    "NULL",
    "QUANTITY",
    "SEMVER",
    "STRING",
    "UINT",
    "Type",
    "assignable",
    "list_of",
    "map_of",
    "parse_type",
]


@dataclass(frozen=True)
class Type:
    """A CEL type: `name` plus parameters (list/map); single upper-case names are type parameters."""

    name: str
    params: tuple[Type, ...] = ()
    fields: tuple[tuple[str, Type], ...] = ()

    def __str__(self) -> str:
        if self.params:
            return f"{self.name}({', '.join(str(p) for p in self.params)})"
        return self.name

    @property
    def is_dyn(self) -> bool:
        """Dyn and Any switch type checking off."""
        return self.name in ("dyn", "any")

    @property
    def is_param(self) -> bool:
        return len(self.name) == 1 and self.name.isupper()

    def field(self, name: str) -> Type | None:
        return dict(self.fields).get(name)


BOOL, INT, UINT, DOUBLE = Type("bool"), Type("int"), Type("uint"), Type("double")
STRING, BYTES, NULL = Type("string"), Type("bytes"), Type("null_type")
DYN, ANY = Type("dyn"), Type("any")
QUANTITY, SEMVER = Type("kubernetes.Quantity"), Type("kubernetes.Semver")
_NAMED = {t.name: t for t in (BOOL, INT, UINT, DOUBLE, STRING, BYTES, NULL, DYN, ANY, QUANTITY, SEMVER)}
_NAMED.update({"Q": QUANTITY, "S": SEMVER})


def list_of(elem: Type) -> Type:
    return Type("list", (elem,))


def map_of(key: Type, value: Type) -> Type:
    return Type("map", (key, value))


def parse_type(text: str) -> Type:
    """`list(A)`, `map(string, int)`, `Q` (Quantity), `S` (Semver), `A` (a type parameter)."""
    text = text.strip()
    if "(" not in text:
        return _NAMED.get(text) or Type(text)
    head, inner = text.split("(", 1)
    inner = inner[:-1]
    depth, parts, start = 0, [], 0
    for i, ch in enumerate(inner):
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            parts.append(inner[start:i])
            start = i + 1
    parts.append(inner[start:])
    return Type(head, tuple(parse_type(p) for p in parts))


def assignable(param: Type, arg: Type, binding: dict[str, Type]) -> bool:
    """Whether `arg` fits `param`, binding type parameters as cel-go's checker does."""
    if param.is_param:
        bound = binding.get(param.name)
        if bound is None or bound.is_dyn:
            binding[param.name] = arg
            return True
        return arg.is_dyn or assignable(bound, arg, binding)
    if param.is_dyn or arg.is_dyn:
        return True
    if param.name != arg.name or len(param.params) != len(arg.params):
        return param.name == arg.name and not param.params
    return all(assignable(p, a, binding) for p, a in zip(param.params, arg.params, strict=True))


def substitute(t: Type, binding: dict[str, Type]) -> Type:
    """Replace type parameters by what they were bound to (dyn if unbound)."""
    if t.is_param:
        return binding.get(t.name, DYN)
    if t.params:
        return Type(t.name, tuple(substitute(p, binding) for p in t.params))
    return t
