"""Parse CEL with cel-python's Lark grammar into a small cel-go shaped AST, expanding macros."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuplatform.cel.errors import CelCompileError

if TYPE_CHECKING:
    import lark
    from celpy.celparser import CELParser

__all__ = ["Call", "Comprehension", "Const", "Expr", "Ident", "ListLit", "MapLit", "Select", "parse"]

_MACROS = {"all", "exists", "exists_one", "map", "filter"}
_BINARY = {
    "relation_lt": "_<_",
    "relation_le": "_<=_",
    "relation_gt": "_>_",
    "relation_ge": "_>=_",
    "relation_eq": "_==_",
    "relation_ne": "_!=_",
    "relation_in": "@in",
    "addition_add": "_+_",
    "addition_sub": "_-_",
    "multiplication_mul": "_*_",
    "multiplication_div": "_/_",
    "multiplication_mod": "_%_",
}


@dataclass(eq=False)
class Expr:
    """Base node; `pos` is (line, column) for error messages."""

    pos: tuple[int, int] = field(default=(1, 1), kw_only=True)


@dataclass(eq=False)
class Const(Expr):
    value: Any


@dataclass(eq=False)
class Ident(Expr):
    name: str


@dataclass(eq=False)
class Select(Expr):
    operand: Expr
    field: str
    test_only: bool = False


@dataclass(eq=False)
class Call(Expr):
    function: str
    args: list[Expr]
    target: Expr | None = None


@dataclass(eq=False)
class ListLit(Expr):
    elements: list[Expr]


@dataclass(eq=False)
class MapLit(Expr):
    entries: list[tuple[Expr, Expr]]


@dataclass(eq=False)
class Comprehension(Expr):
    """A macro kept in its surface form: `kind` is all/exists/exists_one/map/filter/bind."""

    kind: str
    var: str
    range: Expr
    body: Expr
    transform: Expr | None = None


def _cache_file() -> str | bool:
    """Where Lark keeps the parser tables it built (per user; False: build them every time)."""
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gpuplatform"
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return str(root / "cel-grammar.lark") if os.access(root, os.W_OK) else False


@cache
def _parser() -> CELParser:
    """cel-python's parser, built on first use.

    Building the LALR tables takes ~0.2 s, so they are cached with Lark's own cache (keyed by the
    grammar, the options and the Lark version), with exactly the options `CELParser` uses.
    """
    from celpy import celparser
    from celpy.celparser import CELParser
    from lark import Lark

    if CELParser.CEL_PARSER is None:
        grammar = (Path(celparser.__file__).parent / "cel.lark").read_text()
        CELParser.CEL_PARSER = Lark(
            grammar,
            parser="lalr",
            start="expr",
            debug=True,
            g_regex_flags=re.M,
            lexer_callbacks={"IDENT": CELParser.ambiguous_literals},
            propagate_positions=True,
            maybe_placeholders=False,
            priority="invert",
            cache=_cache_file(),
        )
    return CELParser()


def parse(expression: str) -> Expr:
    """Parse `expression`; CelCompileError("Syntax error: ...") if it is not CEL."""
    from celpy.celparser import CELParseError

    try:
        tree = _parser().parse(expression)
    except CELParseError as exc:
        raise CelCompileError(_syntax_error(expression, exc.line or 1, exc.column or 1)) from None
    except RecursionError:
        raise CelCompileError("compilation failed: Syntax error: expression nested too deeply") from None
    return _Builder().build(tree)


def _syntax_error(expression: str, line: int, column: int) -> str:
    """Kubernetes' shape of a syntax error: position, the source line and a caret under the column."""
    lines = expression.split("\n")
    source = lines[min(line, len(lines)) - 1]
    near = (source[column - 1 :].split() or ["<end>"])[0]
    return (
        f"compilation failed: ERROR: <input>:{line}:{column}: Syntax error near {near!r}\n"
        f" | {source}\n | {'.' * (column - 1)}^"
    )


class _Builder:
    def build(self, node: lark.Tree[Any] | lark.Token) -> Expr:
        if isinstance(node, str):  # a lark.Token where a tree was expected
            raise CelCompileError(f"compilation failed: Syntax error: unexpected token {node!s}")
        pos = (getattr(node.meta, "line", 1), getattr(node.meta, "column", 1))
        kids: list[Any] = list(node.children)
        name = node.data
        if name in ("expr",):
            if len(kids) == 3:
                parts = [self.build(k) for k in kids]
                return Call("_?_:_", parts, pos=pos)
            return self.build(kids[0])
        if name in ("conditionalor", "conditionaland"):
            if len(kids) == 1:
                return self.build(kids[0])
            op = "_||_" if name == "conditionalor" else "_&&_"
            return Call(op, [self.build(kids[0]), self.build(kids[1])], pos=pos)
        if name in ("relation", "addition", "multiplication"):
            if len(kids) == 1:
                return self.build(kids[0])
            left: lark.Tree[Any] = kids[0]
            return Call(_BINARY[left.data], [self.build(left.children[0]), self.build(kids[1])], pos=pos)
        if name == "unary":
            if len(kids) == 1:
                return self.build(kids[0])
            unary_op: lark.Tree[Any] = kids[0]
            operand = self.build(kids[1])
            if unary_op.data == "unary_neg" and isinstance(operand, Const) and _is_number(operand.value):
                return Const(
                    -operand.value if not isinstance(operand.value, _Uint) else operand.value, pos=pos
                )
            return Call("!_" if unary_op.data == "unary_not" else "-_", [operand], pos=pos)
        if name in ("member", "primary", "paren_expr"):
            return self.build(kids[0])
        if name == "member_dot":
            return Select(self.build(kids[0]), str(kids[1]), pos=pos)
        if name == "member_dot_arg":
            target = self.build(kids[0])
            args = self._exprlist(kids[2] if len(kids) > 2 else None)
            return self._member_call(target, str(kids[1]), args, pos)
        if name == "member_index":
            return Call("_[_]", [self.build(kids[0]), self.build(kids[1])], pos=pos)
        if name == "ident_arg":
            fn = str(kids[0])
            args = self._exprlist(kids[1] if len(kids) > 1 else None)
            if fn == "has":
                if len(args) != 1 or not isinstance(args[0], Select):
                    raise CelCompileError(
                        "compilation failed: ERROR: <input>: invalid argument to has() macro"
                    )
                sel = args[0]
                return Select(sel.operand, sel.field, test_only=True, pos=pos)
            return Call(fn, args, pos=pos)
        if name == "ident":
            return Ident(str(kids[0]), pos=pos)
        if name in ("dot_ident", "dot_ident_arg"):
            raise CelCompileError("compilation failed: ERROR: <input>: leading-dot names are not supported")
        if name == "literal":
            return Const(_literal(kids[0]), pos=pos)
        if name == "list_lit":
            return ListLit(self._exprlist(kids[0] if kids else None), pos=pos)
        if name == "map_lit":
            entries: list[tuple[Expr, Expr]] = []
            if kids and kids[0] is not None:
                items = [self.build(k) for k in kids[0].children]
                entries = list(zip(items[0::2], items[1::2], strict=True))
            return MapLit(entries, pos=pos)
        if name == "member_object":
            raise CelCompileError("compilation failed: ERROR: <input>: message construction is not supported")
        raise CelCompileError(f"compilation failed: Syntax error: unsupported construct {name}")

    def _exprlist(self, node: Any) -> list[Expr]:
        if node is None:
            return []
        return [self.build(k) for k in node.children]

    def _member_call(self, target: Expr, fn: str, args: list[Expr], pos: tuple[int, int]) -> Expr:
        if fn in _MACROS and len(args) in (2, 3) and isinstance(args[0], Ident):
            if len(args) == 3 and fn != "map":
                raise CelCompileError(f"compilation failed: ERROR: <input>: {fn}() takes two arguments")
            if len(args) == 3:
                return Comprehension("map", args[0].name, target, args[2], transform=args[1], pos=pos)
            return Comprehension(fn, args[0].name, target, args[1], pos=pos)
        if fn in _MACROS and len(args) in (2, 3):
            raise CelCompileError(
                f"compilation failed: ERROR: <input>: {fn}() variable name must be a simple identifier"
            )
        if fn == "bind" and isinstance(target, Ident) and target.name == "cel" and len(args) == 3:
            if not isinstance(args[0], Ident):
                raise CelCompileError(
                    "compilation failed: ERROR: <input>: cel.bind() variable name must be a simple identifier"
                )
            return Comprehension("bind", args[0].name, args[1], args[2], pos=pos)
        if isinstance(target, Ident) and target.name in ("strings", "sets", "math"):
            return Call(f"{target.name}.{fn}", args, pos=pos)
        return Call(fn, args, target=target, pos=pos)


class _Uint(int):
    """CEL uint (kept distinct from int)."""


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _literal(token: lark.Token) -> object:
    kind, text = token.type, token.value
    if kind == "INT_LIT":
        value = int(text, 0) if "x" not in text.lower() else int(text.replace("0x", "").replace("0X", ""), 16)
        if text.startswith("-") and "x" in text.lower():
            value = -int(text[3:], 16)
        if not -(2**63) <= value < 2**63:
            raise CelCompileError(f"compilation failed: ERROR: <input>: invalid int literal {text}")
        return value
    if kind == "UINT_LIT":
        return _Uint(int(text[:-1], 0))
    if kind == "FLOAT_LIT":
        return float(text)
    if kind in ("STRING_LIT", "MLSTRING_LIT"):
        from celpy.evaluation import celstr

        return str(celstr(token))
    if kind == "BYTES_LIT":
        from celpy.evaluation import celbytes

        return bytes(celbytes(token))
    if kind == "BOOL_LIT":
        return text == "true"
    return None
