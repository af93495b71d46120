"""Type-check a parsed selector, estimate its worst-case cost, and collect what it reads from `device`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from gpuplatform.cel.environment import Environment
from gpuplatform.cel.errors import CelCompileError
from gpuplatform.cel.library import Overload, overloads_for
from gpuplatform.cel.literals import Uint
from gpuplatform.cel.syntax import Call, Comprehension, Const, Expr, Ident, ListLit, MapLit, Select
from gpuplatform.cel.types import (
    BOOL,
    BYTES,
    DOUBLE,
    DYN,
    INT,
    NULL,
    QUANTITY,
    SEMVER,
    STRING,
    UINT,
    Type,
    assignable,
    list_of,
    map_of,
    substitute,
)

__all__ = ["ALL", "Checked", "Read", "check"]

MAX = 2**64 - 1
ALL = ("all",)
Read = tuple[str | None, ...]
_SCALARS = {"bool", "int", "uint", "double", "null_type", "kubernetes.Quantity", "kubernetes.Semver"}
_SIZES = {"driver": 63, "attributes": 32, "capacity": 32, "allowMultipleAllocations": 1}


@dataclass
class _Info:
    type: Type
    cost: int = 0
    size: int | None = None
    path: tuple[str, ...] | None = None
    ref: tuple[str, ...] | None = None
    elem_size: int | None = None


@dataclass
class Checked:
    """The checker's verdict: output type, worst-case cost, and the (kind, domain, name) reads."""

    output: Type
    cost: int
    reads: frozenset[Read] = field(default_factory=frozenset)


def check(expr: Expr, env: Environment) -> Checked:
    """Type-check `expr` in `env`; CelCompileError with cel-go's wording on any problem."""
    checker = _Checker(env)
    info = checker.visit(expr, {})
    checker.consume(info.ref)
    return Checked(info.type, min(info.cost, MAX), frozenset(checker.reads))


def _add(*costs: int) -> int:
    return min(sum(costs), MAX)


def _factor(size: int | None, factor: float) -> int:
    return MAX if size is None or size >= MAX else math.ceil(size * factor)


class _Checker:
    def __init__(self, env: Environment) -> None:
        self.env = env
        self.table = overloads_for(env.library_minor, env.includes)
        self.reads: set[Read] = set()

    def fail(self, node: Expr, message: str) -> CelCompileError:
        line, col = node.pos
        return CelCompileError(f"compilation failed: ERROR: <input>:{line}:{col}: {message}")

    def consume(self, ref: tuple[str, ...] | None) -> None:
        if ref is None or ref[0] == "driver":
            return
        if ref[0] == "device":
            self.reads.add(ALL)
        else:
            padded: Read = (*ref, *([None] * (3 - len(ref))))
            self.reads.add(ref if ref[0] == "allowMultipleAllocations" else padded)

    def size_of(self, path: tuple[str, ...] | None) -> int | None:
        if not path or path[0] != "device" or len(path) < 2:
            return None
        kind, rest = path[1], path[2:]
        if kind not in _SIZES:
            return None
        if not rest:
            return _SIZES[kind]
        if kind not in ("attributes", "capacity"):
            return None
        if rest[0] == "@keys":
            return 63 if len(rest) == 1 else None
        if len(rest) == 1:
            return 32
        if rest[1] == "@keys":
            return 32 if len(rest) == 2 else None
        if len(rest) == 2 and kind == "attributes":
            return 64
        return None

    def visit(self, node: Expr, scope: dict[str, _Info]) -> _Info:
        if isinstance(node, Const):
            return self.const(node)
        if isinstance(node, Ident):
            return self.ident(node, scope)
        if isinstance(node, Select):
            return self.select(node, scope)
        if isinstance(node, Call):
            return self.call(node, scope)
        if isinstance(node, ListLit):
            items = [self.visit(e, scope) for e in node.elements]
            for item in items:
                self.consume(item.ref)
            elem = _join([i.type for i in items])
            sizes = [i.size for i in items]
            elem_size = None if None in sizes else max([s for s in sizes if s is not None], default=0)
            return _Info(list_of(elem), _add(10, *(i.cost for i in items)), len(items), elem_size=elem_size)
        if isinstance(node, MapLit):
            keys = [self.visit(k, scope) for k, _ in node.entries]
            values = [self.visit(v, scope) for _, v in node.entries]
            for item in (*keys, *values):
                self.consume(item.ref)
            mtype = map_of(_join([k.type for k in keys]), _join([v.type for v in values]))
            return _Info(mtype, _add(30, *(i.cost for i in (*keys, *values))), len(keys))
        assert isinstance(node, Comprehension)
        return self.comprehension(node, scope)

    def const(self, node: Const) -> _Info:
        value = node.value
        if isinstance(value, bool):
            return _Info(BOOL, size=1)
        if isinstance(value, str):
            return _Info(STRING, size=len(value))
        if isinstance(value, bytes):
            return _Info(BYTES, size=len(value))
        if value is None:
            return _Info(NULL, size=1)
        if isinstance(value, float):
            return _Info(DOUBLE, size=1)
        return _Info(UINT if isinstance(value, Uint) else INT, size=1)

    def ident(self, node: Ident, scope: dict[str, _Info]) -> _Info:
        if node.name in scope:
            bound = scope[node.name]
            return _Info(bound.type, 1, bound.size, bound.path, bound.ref, bound.elem_size)
        if node.name == "device":
            return _Info(self.env.device_type, 1, path=("device",), ref=("device",))
        raise self.fail(node, f"undeclared reference to '{node.name}' (in container '')")

    def select(self, node: Select, scope: dict[str, _Info]) -> _Info:
        operand = self.visit(node.operand, scope)
        ref = _extend(operand.ref, node.field)
        target = operand.type
        if target.name == "kubernetes.DRADevice":
            ftype = target.field(node.field)
            if ftype is None:
                raise self.fail(node, f"undefined field '{node.field}'")
        elif target.name == "map":
            if not assignable(target.params[0], STRING, {}):
                raise self.fail(node, f"type '{target}' does not support field selection")
            ftype = target.params[1]
        elif target.is_dyn:
            ftype = DYN
        else:
            raise self.fail(node, f"type '{target}' does not support field selection")
        if node.test_only:
            self.consume(ref if ref and len(ref) > 1 else operand.ref)
            return _Info(BOOL, _add(operand.cost, 1), 1)
        if ref is None:
            self.consume(operand.ref)
        path = (*operand.path, node.field) if operand.path else None
        extra = 1 if target.name in ("map", "kubernetes.DRADevice") else 0
        return _Info(ftype, _add(operand.cost, extra), self.size_of(path) or _type_size(ftype), path, ref)

    def call(self, node: Call, scope: dict[str, _Info]) -> _Info:
        target = self.visit(node.target, scope) if node.target is not None else None
        args = [self.visit(a, scope) for a in node.args]
        handled, ref = self.call_ref(node, args)
        if not handled:
            for item in (target, *args):
                if item is not None:
                    self.consume(item.ref)
        candidates = self.table.get(node.function)
        if not candidates:
            raise self.fail(node, f"undeclared reference to '{node.function}' (in container '')")
        operands = ([target] if target is not None else []) + args
        matched: list[tuple[Overload, Type]] = []
        for overload in candidates:
            if overload.member != (target is not None) or len(overload.params) != len(operands):
                continue
            binding: dict[str, Type] = {}
            if all(assignable(p, o.type, binding) for p, o in zip(overload.params, operands, strict=True)):
                matched.append((overload, substitute(overload.result, binding)))
        if not matched:
            shown = ", ".join(str(a.type) for a in args)
            applied = f"{target.type}.({shown})" if target is not None else f"({shown})"
            raise self.fail(node, f"found no matching overload for '{node.function}' applied to '{applied}'")
        results = {str(r): r for _, r in matched}
        result = next(iter(results.values())) if len(results) == 1 else DYN
        cost, size = self.call_cost(matched[0][0], target, args)
        base = (
            _add(*(o.cost for o in operands)) if matched[0][0].cost not in ("logical", "conditional") else 0
        )
        info = _Info(result, _add(base, cost), size if size is not None else _type_size(result), ref=ref)
        if matched[0][0].cost in ("split", "regex") and target is not None:
            info.elem_size = target.size
        if node.function == "_[_]" and args[0].path:
            info.path = (*args[0].path, "@values" if args[0].type.name == "map" else "@items")
            info.size = self.size_of(info.path) or info.size
        if node.function == "_[_]" and args[0].elem_size is not None:
            info.size = args[0].elem_size
        return info

    def call_ref(self, node: Call, args: list[_Info]) -> tuple[bool, tuple[str, ...] | None]:
        """Whether the call only narrows a `device` reference (and to what); presence tests are reads."""
        if (
            node.function == "_[_]"
            and isinstance(node.args[1], Const)
            and isinstance(node.args[1].value, str)
        ):
            ref = _extend(args[0].ref, node.args[1].value)
            return ref is not None, ref
        if node.function == "@in" and isinstance(node.args[0], Const) and isinstance(node.args[0].value, str):
            inner = _extend(args[1].ref, node.args[0].value)
            if inner is not None and inner[0] in ("attributes", "capacity"):
                self.consume(inner)
                return True, None
        return False, None

    def call_cost(
        self, overload: Overload, target: _Info | None, args: list[_Info]
    ) -> tuple[int, int | None]:
        kind = overload.cost
        recv = target.size if target is not None else None
        if kind == "logical":
            return _add(args[0].cost, args[1].cost), 1
        if kind == "conditional":
            return _add(args[0].cost, max(args[1].cost, args[2].cost)), None
        if kind == "equality":
            if {a.type.name for a in args} & {QUANTITY.name, SEMVER.name}:
                return 1, 1
            sizes = [MAX if a.size is None else a.size for a in args]
            return _factor(min(sizes), 0.1), 1
        if kind == "in_list":
            return (MAX if args[1].size is None else args[1].size), 1
        if kind == "concat":
            total = None if None in (args[0].size, args[1].size) else args[0].size + args[1].size  # type: ignore[operator]
            return _factor(total, 0.1), total
        if kind == "contains" and target is not None:
            return min(_factor(recv, 0.1) * _factor(args[0].size, 0.1), MAX), 1
        if kind == "prefix":
            return _factor(args[0].size, 0.1), 1
        if kind == "regex" and target is not None:
            str_cost = _factor(None if recv is None else recv + 1, 0.1)
            return min(str_cost * _factor(args[0].size, 0.25), MAX), recv
        if kind == "list" and target is not None:
            elem = 1
            if target.type.params and target.type.params[0] in (STRING, BYTES):
                elem += _factor(target.elem_size, 0.1)
            return (MAX if recv is None else min(recv * elem, MAX)), None
        if kind == "traverse_arg":
            return _factor(args[0].size, 0.1), None
        if kind in ("traverse", "traverse_same"):
            return _factor(recv, 0.1), (recv if kind == "traverse_same" else None)
        if kind in ("replace", "split"):
            return _factor(recv, 0.2), recv
        if kind == "join" and target is not None:
            total = None if recv is None or target.elem_size is None else recv * target.elem_size
            return _factor(total, 0.2), total
        if kind == "sets":
            sizes = [MAX if a.size is None else a.size for a in args]
            return min(sizes[0] * sizes[1], MAX), 1
        if kind == "includes":
            return 48, 1
        return 1, None

    def comprehension(self, node: Comprehension, scope: dict[str, _Info]) -> _Info:
        rng = self.visit(node.range, scope)
        if node.kind == "bind":
            inner = dict(scope)
            inner[node.var] = _Info(rng.type, 0, rng.size, rng.path, rng.ref, rng.elem_size)
            body = self.visit(node.body, inner)
            self.consume(body.ref)
            return _Info(body.type, _add(10, rng.cost, body.cost), body.size, elem_size=body.elem_size)
        self.consume(rng.ref)
        rtype = rng.type
        if rtype.name == "list" or rtype.name == "map":
            var_type = rtype.params[0]
        elif rtype.name == "dyn":
            var_type = DYN
        else:
            raise self.fail(
                node,
                f"expression of type '{rtype}' cannot be the range of a comprehension "
                "(must be list, map, or dynamic)",
            )
        step_path = None
        if rng.path:
            step_path = (*rng.path, "@keys" if rtype.name == "map" else "@items")
        var_size = (
            rng.elem_size if rng.elem_size is not None else self.size_of(step_path) or _type_size(var_type)
        )
        inner = dict(scope)
        inner[node.var] = _Info(var_type, 0, var_size, step_path)
        body = self.visit(node.body, inner)
        self.consume(body.ref)
        count = MAX if rng.size is None else rng.size
        if node.kind in ("all", "exists", "exists_one", "filter") and not assignable(BOOL, body.type, {}):
            raise self.fail(node, f"found no matching overload for '_&&_' applied to '(bool, {body.type})'")
        if node.kind == "map":
            transform = self.visit(node.transform, inner) if node.transform is not None else None
            if transform is not None:
                self.consume(transform.ref)
                step = _add(body.cost, 12, transform.cost)
                out = list_of(transform.type)
            else:
                step, out = _add(12, body.cost), list_of(body.type)
            return _Info(out, _add(rng.cost, 10, 1, min(count * step, MAX)), rng.size)
        per_item = {
            "all": _add(2, 1, body.cost),
            "exists": _add(3, 1, body.cost),
            "exists_one": _add(body.cost, 2),
            "filter": _add(body.cost, 13),
        }[node.kind]
        init_result = {"all": 1, "exists": 1, "exists_one": 2, "filter": 11}[node.kind]
        out = list_of(var_type) if node.kind == "filter" else BOOL
        return _Info(
            out,
            _add(rng.cost, init_result, min(count * per_item, MAX)),
            rng.size if node.kind == "filter" else 1,
        )


def _extend(ref: tuple[str, ...] | None, name: str) -> tuple[str, ...] | None:
    if ref is None:
        return None
    if ref == ("device",):
        mapping = {"attributes": ("attributes",), "capacity": ("capacity",), "driver": ("driver",)}
        multi = ("allowMultipleAllocations",) if name == "allowMultipleAllocations" else None
        return mapping.get(name, multi)
    if ref[0] in ("attributes", "capacity") and len(ref) < 3:
        return (*ref, name)
    return None


def _type_size(t: Type) -> int | None:
    return 1 if t.name in _SCALARS else None


def _join(types: list[Type]) -> Type:
    if not types:
        return DYN
    first = types[0]
    return first if all(t == first for t in types) else DYN
