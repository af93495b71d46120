"""Evaluate a checked selector AST with cel-go's semantics: error values, `&&`/`||` absorption, cost limit."""

from __future__ import annotations

from typing import Any

from gpuplatform.cel.runtime import (
    ARITH,
    FUNCTIONS,
    EvalError,
    cel_equals,
    compare,
    go_type_name,
    no_overload,
)
from gpuplatform.cel.syntax import Call, Comprehension, Const, Expr, Ident, ListLit, MapLit, Select

__all__ = ["evaluate"]

_COMPARE = {
    "_<_": lambda c: c < 0,
    "_<=_": lambda c: c <= 0,
    "_>_": lambda c: c > 0,
    "_>=_": lambda c: c >= 0,
}
_ARITH = {"_+_": "+", "_-_": "-", "_*_": "*", "_/_": "/", "_%_": "%"}


def evaluate(expr: Expr, variables: dict[str, Any], cost_limit: int) -> Any:
    """Evaluate `expr`; raises EvalError (also when the running cost passes `cost_limit`)."""
    return _Run(cost_limit).eval(expr, variables)


class _Run:
    def __init__(self, limit: int) -> None:
        self.left = limit

    def charge(self, units: int = 1) -> None:
        self.left -= units
        if self.left < 0:
            raise EvalError("operation cancelled: actual cost limit exceeded")

    def eval(self, node: Expr, env: dict[str, Any]) -> Any:
        if isinstance(node, Const):
            return node.value
        if isinstance(node, Ident):
            self.charge()
            return env[node.name]
        if isinstance(node, Select):
            return self.select(node, env)
        if isinstance(node, Call):
            return self.call(node, env)
        if isinstance(node, ListLit):
            self.charge(10)
            return [self.eval(e, env) for e in node.elements]
        if isinstance(node, MapLit):
            self.charge(30)
            out: dict[Any, Any] = {}
            for k, v in node.entries:
                key = self.eval(k, env)
                if key in out:
                    raise EvalError(f"Failed with repeated key: {key}")
                out[key] = self.eval(v, env)
            return out
        assert isinstance(node, Comprehension)
        return self.comprehension(node, env)

    def select(self, node: Select, env: dict[str, Any]) -> Any:
        operand = self.eval(node.operand, env)
        self.charge()
        if not isinstance(operand, dict):
            raise EvalError(f"no such key: {node.field}" if operand is not None else "no such overload")
        if node.test_only:
            return node.field in operand
        return _lookup(operand, node.field)

    def call(self, node: Call, env: dict[str, Any]) -> Any:
        fn = node.function
        if fn in ("_&&_", "_||_"):
            return self.logical(node, env, fn == "_||_")
        if fn == "_?_:_":
            cond = self.eval(node.args[0], env)
            if not isinstance(cond, bool):
                raise no_overload()
            return self.eval(node.args[1] if cond else node.args[2], env)
        target = self.eval(node.target, env) if node.target is not None else None
        args = [self.eval(a, env) for a in node.args]
        self.charge()
        if fn == "!_":
            if not isinstance(args[0], bool):
                raise no_overload()
            return not args[0]
        if fn == "-_":
            return ARITH("-", type(args[0])(0), args[0]) if not isinstance(args[0], bool) else _fail()
        if fn in ("_==_", "_!=_"):
            return cel_equals(args[0], args[1]) == (fn == "_==_")
        if fn in _COMPARE:
            return _COMPARE[fn](compare(args[0], args[1]))
        if fn in _ARITH:
            return ARITH(_ARITH[fn], args[0], args[1])
        if fn == "@in":
            return _contains(args[1], args[0])
        if fn == "_[_]":
            return _index(args[0], args[1])
        if isinstance(target, str | bytes | list):
            self.charge(len(target) // 10)
        impl = FUNCTIONS.get(fn)
        if impl is None:
            raise EvalError(f"no such overload: {fn}")
        try:
            return impl(target, *args) if node.target is not None else impl(*args)
        except (TypeError, KeyError, ValueError, OverflowError):
            raise no_overload() from None

    def logical(self, node: Call, env: dict[str, Any], is_or: bool) -> Any:
        error: EvalError | None = None
        for arg in node.args:
            try:
                value = self.eval(arg, env)
            except EvalError as exc:
                if "cost limit" in str(exc):
                    raise
                error = error or exc
                continue
            if not isinstance(value, bool):
                error = error or no_overload()
            elif value is is_or:
                return is_or
        if error is not None:
            raise error
        return not is_or

    def comprehension(self, node: Comprehension, env: dict[str, Any]) -> Any:
        value = self.eval(node.range, env)
        if node.kind == "bind":
            self.charge(10)
            return self.eval(node.body, {**env, node.var: value})
        if not isinstance(value, list | dict):
            raise EvalError(f"got '{go_type_name(value)}', expected iterable type")
        scope = dict(env)
        error: EvalError | None = None
        results: list[Any] = []
        count = 0
        for item in list(value):
            self.charge(2)
            scope[node.var] = item
            if node.kind in ("all", "exists"):
                try:
                    verdict = self.eval(node.body, scope)
                except EvalError as exc:
                    if "cost limit" in str(exc):
                        raise
                    error = error or exc
                    continue
                if not isinstance(verdict, bool):
                    error = error or no_overload()
                elif verdict is (node.kind == "exists"):
                    return verdict
                continue
            if node.kind == "map" and node.transform is None:
                results.append(self.eval(node.body, scope))
                continue
            keep = self.eval(node.body, scope)
            if not isinstance(keep, bool):
                raise no_overload()
            if node.kind == "exists_one":
                count += keep
            elif keep:
                results.append(self.eval(node.transform, scope) if node.transform is not None else item)
        if node.kind in ("all", "exists"):
            if error is not None:
                raise error
            return node.kind == "all"
        return count == 1 if node.kind == "exists_one" else results


def _lookup(mapping: dict[Any, Any], key: Any) -> Any:
    if key in mapping:
        return mapping[key]
    missing = getattr(mapping, "missing", None)
    if missing is not None:
        return missing
    raise EvalError(f"no such key: {key}")


def _index(container: Any, key: Any) -> Any:
    if isinstance(container, list):
        if not isinstance(key, int) or isinstance(key, bool):
            raise no_overload()
        if not 0 <= key < len(container):
            raise EvalError(f"index out of range: {key}")
        return container[key]
    if isinstance(container, dict):
        if isinstance(key, float) and key.is_integer():
            key = int(key)
        return _lookup(container, key)
    raise no_overload()


def _contains(container: Any, item: Any) -> bool:
    if isinstance(container, list):
        return any(_safe(x, item) for x in container)
    if isinstance(container, dict):
        return item in container
    raise no_overload()


def _safe(a: Any, b: Any) -> bool:
    try:
        return cel_equals(a, b)
    except EvalError:
        return False


def _fail() -> Any:
    raise no_overload()
