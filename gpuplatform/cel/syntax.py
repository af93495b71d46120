"""Parse CEL into a small cel-go shaped AST, expanding macros, with cel-go's grammar and limits.

A recursive-descent parser over `lexer.tokenize`, following google/cel-go v0.26.0 (the version
Kubernetes 1.36 builds with): `parser/gen/CEL.g4` for the grammar, `parser/parser.go` for the tree
(`!!x` is `x`, a `-` directly before a number is part of the literal, reserved identifiers) and
`parser/helper.go` for `&&`/`||` chains, which become balanced trees. A node's `pos` is where its
text starts (a binary operator's is its left operand's). The first syntax error is reported with
Kubernetes' caret display; other problems are reported once the whole text has parsed.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from gpuplatform.cel.errors import CelCompileError
from gpuplatform.cel.lexer import Token, tokenize
from gpuplatform.cel.literals import KINDS, literal_value

__all__ = ["Call", "Comprehension", "Const", "Expr", "Ident", "ListLit", "MapLit", "Select", "parse"]

#: cel-go's default parser recursion limit; Kubernetes does not set `cel.ParserRecursionLimit`.
MAX_RECURSION = 250
_FRAMES_PER_LEVEL = 8
_ROOM = threading.Lock()
_RELATION = 3
_PRECEDENCE = {"||": 1, "&&": 2, "+": 4, "-": 4, "*": 5, "/": 5, "%": 5}
_PRECEDENCE |= dict.fromkeys(["<", "<=", ">", ">=", "==", "!=", "in"], _RELATION)
_FUNCTIONS = {"<": "_<_", "<=": "_<=_", ">": "_>_", ">=": "_>=_", "==": "_==_", "!=": "_!=_", "in": "@in"}
_FUNCTIONS |= {"+": "_+_", "-": "_-_", "*": "_*_", "/": "_/_", "%": "_%_"}
_MACROS = {"all", "exists", "exists_one", "map", "filter"}
_NAMESPACES = {"strings", "sets", "math"}
_RESERVED = {"as", "break", "const", "continue", "else", "for", "function", "if", "import", "let", "loop"}
_RESERVED |= {"package", "namespace", "return", "var", "void", "while"}
#: Calls cel-go's visitor counts towards its recursion depth (relation, calc, ternary, index).
_COUNTED = frozenset(_FUNCTIONS.values()) | {"_?_:_", "_[_]"}
_PREFIX = "compilation failed: ERROR: <input>"
_T = TypeVar("_T")


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


def parse(expression: str) -> Expr:
    """Parse `expression`; CelCompileError with Kubernetes' message if it is not CEL.

    cel-go accepts 250 nested levels and this parser spends up to 8 Python frames on one, more
    than Python's default limit allows; it runs with that much room above the caller's limit (one
    parse at a time, so that the limit is always put back).
    """
    with _ROOM:
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(limit + _FRAMES_PER_LEVEL * MAX_RECURSION)
        try:
            return _Parser(expression).parse()
        except RecursionError:
            raise CelCompileError(f"{_PREFIX}:-1:0: max recursion depth exceeded") from None
        finally:
            sys.setrecursionlimit(limit)


def _syntax_error(expression: str, line: int, column: int) -> str:
    """Kubernetes' shape of a syntax error: position, the source line and a caret under the column."""
    lines = expression.split("\n")
    source = lines[min(line, len(lines)) - 1]
    near = (source[column - 1 :].split() or ["<end>"])[0]
    return (
        f"compilation failed: ERROR: <input>:{line}:{column}: Syntax error near {near!r}\n"
        f" | {source}\n | {'.' * (column - 1)}^"
    )


def _pos(token: Token) -> tuple[int, int]:
    return (token.line, token.column)


class _Parser:
    """One parse: tokens, the position in them, cel-go's rule depths and the first deferred error.

    `exprs`, `relations` and `calcs` count the nested `expr`, `relation` and `calc` rule contexts
    cel-go's ANTLR parser would have open (its `recursionListener` refuses more than 250 of a kind).
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = tokenize(text)
        self.at = 0
        self.token = self.tokens[0]
        self.error: str | None = None
        self.exprs = self.relations = self.calcs = 0

    def parse(self) -> Expr:
        tree = self.expr()
        if self.token.kind != "eof":
            raise self.unexpected()
        if len(self.tokens) > MAX_RECURSION and _visit_depth(tree) > MAX_RECURSION:
            raise CelCompileError(f"{_PREFIX}:-1:0: max recursion depth exceeded")
        if self.error is not None:
            raise CelCompileError(self.error)
        return tree

    def advance(self) -> Token:
        token = self.token
        self.at += 1
        self.token = self.tokens[self.at]
        return token

    def expect(self, kind: str) -> Token:
        if self.token.kind != kind:
            raise self.unexpected()
        return self.advance()

    def unexpected(self) -> CelCompileError:
        return CelCompileError(_syntax_error(self.text, self.token.line, self.token.column))

    def defer(self, message: str) -> None:
        """Keep the first non-syntax error; it is raised once the whole text has parsed."""
        if self.error is None:
            self.error = message

    def expr(self) -> Expr:
        """`or ['?' or ':' expr]`."""
        self.exprs += 1
        if self.exprs > MAX_RECURSION:
            raise _too_deep()
        start = self.token
        node = self.binary()
        if self.token.kind == "?":
            self.advance()
            then = self.binary()
            self.expect(":")
            node = Call("_?_:_", [node, then, self.expr()], pos=_pos(start))
        self.exprs -= 1
        return node

    def binary(self) -> Expr:
        """Every binary operator, by precedence climbing on explicit stacks (all left-associative).

        Relation and arithmetic operators fold into calls as they are reduced; the terms of `&&` and
        `||` are collected and balanced. cel-go opens one `relation` and one `calc` context per
        operand, one more `relation` inside a relation's right operand and one more `calc` inside
        each pending `+ -` and `* / %` right operand.
        """
        ors: list[tuple[Token, Expr]] = []
        ands: list[tuple[Token, Expr]] = []
        operands: list[tuple[Token, Expr]] = []
        pending: list[str] = []
        while True:
            start = self.token
            relations = 1 + sum(_PRECEDENCE[op] == _RELATION for op in pending)
            calcs = 1 + sum(_PRECEDENCE[op] > _RELATION for op in pending)
            self.relations += relations
            self.calcs += calcs
            if self.relations > MAX_RECURSION or self.calcs > MAX_RECURSION:
                raise _too_deep()
            operands.append((start, self.unary()))
            self.relations -= relations
            self.calcs -= calcs
            kind = self.token.kind
            precedence = _PRECEDENCE.get(kind, 0)
            while pending and _PRECEDENCE[pending[-1]] >= precedence:
                right = operands.pop()[1]
                left_start, left = operands.pop()
                operands.append(
                    (left_start, Call(_FUNCTIONS[pending.pop()], [left, right], pos=_pos(left_start)))
                )
            if precedence >= _RELATION:
                pending.append(kind)
                self.advance()
                continue
            ands.append(operands.pop())
            if kind == "&&":
                self.advance()
                continue
            ors.append(_balance(ands, "_&&_"))
            ands = []
            if kind != "||":
                return _balance(ors, "_||_")[1]
            self.advance()

    def unary(self) -> Expr:
        """`member`, `'!'+ member` or `'-'+ member`: an even run of one operator cancels out."""
        first = self.token
        if first.kind not in ("!", "-") or (
            first.kind == "-" and self.tokens[self.at + 1].kind in ("int", "float")
        ):
            return self.member()
        count = 0
        while self.token.kind == first.kind:
            self.advance()
            count += 1
        operand = self.member()
        if count % 2 == 0:
            return operand
        return Call("!_" if first.kind == "!" else "-_", [operand], pos=_pos(first))

    def member(self) -> Expr:
        """A primary, then selections, member calls, indexes and (refused) message construction."""
        start = self.token
        error_before = self.error
        node = self.primary()
        qualified = isinstance(node, Ident) and start.kind in ("ident", ".")
        while True:
            kind = self.token.kind
            if kind == ".":
                self.advance()
                name = self.expect("ident").text
                if self.token.kind == "(":
                    self.advance()
                    node = self.member_call(node, name, self.arguments(), _pos(start))
                    qualified = False
                else:
                    node = Select(node, name, pos=_pos(start))
            elif kind == "[":
                self.advance()
                node = Call("_[_]", [node, self.expr()], pos=_pos(start))
                self.expect("]")
                qualified = False
            elif kind == "{" and qualified:
                self.advance()
                self.entries("}", self.field_initializer)
                if error_before is None:
                    self.error = f"{_PREFIX}: message construction is not supported"
                qualified = False
            else:
                return node

    def primary(self) -> Expr:
        token = self.token
        kind = token.kind
        if kind == "ident":
            return self.identifier()
        if kind == ".":
            self.advance()
            self.defer(f"{_PREFIX}: leading-dot names are not supported")
            name = self.expect("ident")
            if self.token.kind != "(":
                return Ident(name.text, pos=_pos(name))
            self.advance()
            return Call(name.text, self.arguments(), pos=_pos(name))
        if kind == "(":
            self.advance()
            node = self.expr()
            self.expect(")")
            return node
        if kind == "[":
            self.advance()
            return ListLit(self.entries("]", self.expr), pos=_pos(token))
        if kind == "{":
            self.advance()
            return MapLit(self.entries("}", self.map_entry), pos=_pos(token))
        return self.literal()

    def identifier(self) -> Expr:
        """A name or a global call; `has(a.b)` becomes a presence test."""
        token = self.advance()
        name = token.text
        if name in _RESERVED:
            self.defer(f"{_PREFIX}:{token.line}:{token.column}: reserved identifier: {name}")
        if self.token.kind != "(":
            return Ident(name, pos=_pos(token))
        self.advance()
        args = self.arguments()
        if name != "has":
            return Call(name, args, pos=_pos(token))
        if len(args) != 1 or not isinstance(args[0], Select):
            self.defer(f"{_PREFIX}: invalid argument to has() macro")
            return Call(name, args, pos=_pos(token))
        return Select(args[0].operand, args[0].field, test_only=True, pos=_pos(token))

    def arguments(self) -> list[Expr]:
        """`[expr (',' expr)*] ')'`, the opening parenthesis already read."""
        args: list[Expr] = []
        if self.token.kind != ")":
            args.append(self.expr())
            while self.token.kind == ",":
                self.advance()
                args.append(self.expr())
        self.expect(")")
        return args

    def entries(self, close: str, read: Callable[[], _T]) -> list[_T]:
        """Comma-separated items up to `close`; cel-go allows a trailing comma, and one alone."""
        items: list[_T] = []
        if self.token.kind == ",":
            self.advance()
        else:
            while self.token.kind != close:
                items.append(read())
                if self.token.kind != ",":
                    break
                self.advance()
        self.expect(close)
        return items

    def map_entry(self) -> tuple[Expr, Expr]:
        key = self.expr()
        self.expect(":")
        return key, self.expr()

    def field_initializer(self) -> None:
        self.expect("ident")
        self.expect(":")
        self.expr()

    def literal(self) -> Expr:
        token = self.token
        kind = token.kind
        sign = ""
        if kind == "-":
            self.advance()
            if self.token.kind not in ("int", "float"):
                raise self.unexpected()
            sign, kind = "-", self.token.kind
        elif kind not in KINDS:
            raise self.unexpected()
        text = sign + self.advance().text
        try:
            value = literal_value(kind, text)
        except ValueError as exc:
            self.defer(_literal_error(kind, text, token, str(exc)))
            value = None
        return Const(value, pos=_pos(token))

    def member_call(self, target: Expr, fn: str, args: list[Expr], pos: tuple[int, int]) -> Expr:
        """Macros (all/exists/exists_one/map/filter, `cel.bind`), namespaced functions, receiver calls."""
        if fn in _MACROS and len(args) in (2, 3) and isinstance(args[0], Ident):
            if len(args) == 3 and fn != "map":
                self.defer(f"{_PREFIX}: {fn}() takes two arguments")
            elif len(args) == 3:
                return Comprehension("map", args[0].name, target, args[2], transform=args[1], pos=pos)
            else:
                return Comprehension(fn, args[0].name, target, args[1], pos=pos)
        elif fn in _MACROS and len(args) in (2, 3):
            self.defer(f"{_PREFIX}: {fn}() variable name must be a simple identifier")
        elif fn == "bind" and isinstance(target, Ident) and target.name == "cel" and len(args) == 3:
            if isinstance(args[0], Ident):
                return Comprehension("bind", args[0].name, args[1], args[2], pos=pos)
            self.defer(f"{_PREFIX}: cel.bind() variable name must be a simple identifier")
        elif isinstance(target, Ident) and target.name in _NAMESPACES:
            return Call(f"{target.name}.{fn}", args, pos=pos)
        return Call(fn, args, target=target, pos=pos)


def _too_deep() -> CelCompileError:
    return CelCompileError(f"{_PREFIX}:-1:0: expression recursion limit exceeded: {MAX_RECURSION}")


def _balance(terms: list[tuple[Token, Expr]], function: str) -> tuple[Token, Expr]:
    """cel-go's `logicManager.balancedTree`: the middle operator at the root, halves below it."""
    if len(terms) == 1:
        return terms[0]

    def tree(lo: int, hi: int) -> Expr:
        mid = (lo + hi + 1) // 2
        left = terms[mid][1] if mid == lo else tree(lo, mid - 1)
        right = terms[mid + 1][1] if mid == hi else tree(mid + 1, hi)
        return Call(function, [left, right], pos=_pos(terms[lo][0]))

    return terms[0][0], tree(0, len(terms) - 2)


def _visit_depth(tree: Expr) -> int:
    """The deepest nesting of nodes cel-go's visitor counts (relations, arithmetic, ternaries,
    selections, member calls, indexes); it refuses more than 250."""
    deepest = 0
    stack: list[tuple[Expr, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        children: list[Expr] = []
        counted = True
        if isinstance(node, Select):
            children = [node.operand]
        elif isinstance(node, Call):
            children = [*node.args, *([node.target] if node.target is not None else [])]
            counted = node.function in _COUNTED or node.target is not None or "." in node.function
        elif isinstance(node, Comprehension):
            children = [node.range, node.body, *([node.transform] if node.transform is not None else [])]
        elif isinstance(node, ListLit):
            children, counted = node.elements, False
        elif isinstance(node, MapLit):
            children, counted = [part for entry in node.entries for part in entry], False
        else:
            counted = False
        depth += counted
        deepest = max(deepest, depth)
        stack.extend((child, depth) for child in children)
    return deepest


def _literal_error(kind: str, text: str, token: Token, reason: str) -> str:
    """cel-go's message: where a string or bytes literal starts, or (as before) a number's text."""
    if kind in ("string", "bytes"):
        return f"{_PREFIX}:{token.line}:{token.column}: {reason}"
    return f"{_PREFIX}: {reason} {text}"
