"""The parser gpuplatform.cel used before its own: cel-python 0.5.0's Lark grammar and a tree builder.

Kept as the oracle of `tests/cel/test_parser_differential.py`. Lark's LALR parser over celpy's
grammar decides what parses, precedence, associativity and where each node starts; the builder is
the old one, with the corrections below, each a deliberate difference listed in docs/cel-fidelity.md
("The parser") where cel-go, which Kubernetes runs, decides otherwise:

1. `true`/`false` keep their position (celpy's lexer callback made new tokens without one).
2. A syntax error at the end of the text is reported at the end, as cel-go's `<EOF>` error is
   (Lark borrowed the last token's position).
3. `in` and `null` are keywords wherever they stand (Lark's contextual lexer read them as names
   after `.` and where an operand starts).
4. Prefix operators follow cel-go's `unary` rule: a run of `!` or of `-` (an even run cancels), `!`
   then `-number`, and a sign belongs to a number only directly after a single `-`; Lark's lexer
   put the sign into the number token wherever an operand starts, and the builder folded `-` into
   any number, `-(2)` and `- 1u` included.
5. Chains of `&&` and `||` are balanced trees (cel-go's `logicManager`), not left-deep.
6. Reserved words (`if`, `for`, ...) are not names: `reserved identifier: if`.
7. A name that starts with `in` is one name after an operand too (Lark's contextual lexer read
   `x inputs` as `x in puts`).
8. Message construction (refused either way) only after a qualified name, as in cel-go's grammar:
   `f(){}` and `null.T{}` are syntax errors at the `{`.

The syntax errors of 3, 4, 7 and 8 are raised by a post-lexer as Lark reads the tokens, so the
first error in the text wins, as in a parser of cel-go's grammar.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

from celpy import celparser
from celpy.evaluation import celbytes, celstr
from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedInput, UnexpectedToken

from gpuplatform.cel.errors import CelCompileError
from gpuplatform.cel.literals import Uint
from gpuplatform.cel.syntax import (
    Call,
    Comprehension,
    Const,
    Expr,
    Ident,
    ListLit,
    MapLit,
    Select,
    _syntax_error,
)

__all__ = ["parse"]

_PREFIX = "compilation failed: ERROR: <input>"
_MACROS = {"all", "exists", "exists_one", "map", "filter"}
_RESERVED = {"as", "break", "const", "continue", "else", "for", "function", "if", "import", "let", "loop"}
_RESERVED |= {"package", "namespace", "return", "var", "void", "while"}
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
_NUMBERS = {"INT_LIT", "FLOAT_LIT"}
_LITERALS = {*_NUMBERS, "UINT_LIT", "STRING_LIT", "MLSTRING_LIT", "BYTES_LIT", "BOOL_LIT", "NULL_LIT"}
#: Tokens an operand can end with: after one, `-` is binary and `{` builds a message.
_OPERAND_END = {*_LITERALS, "IDENT", "RPAR", "RSQB", "RBRACE"}


class _SyntaxAt(Exception):
    def __init__(self, line: int, column: int) -> None:
        super().__init__(line, column)
        self.line, self.column = line, column


def _literals(token: Token) -> Token:
    """celpy's `ambiguous_literals`, keeping the position (1)."""
    if token.value in ("true", "false"):
        return Token.new_borrow_pos("BOOL_LIT", token.value, token)
    return token


class _CelGoTokens:
    """A Lark post-lexer raising, in text order, the syntax errors of corrections 3, 4, 7 and 8.

    It sees Lark's tokens as cel-go's lexer would (a signed number is `-` and the number) and keeps
    the kinds read so far. `_source` holds the text being parsed (for what follows `in`).
    """

    always_accept: tuple[str, ...] = ()

    def process(self, stream: Iterator[Token]) -> Iterator[Token]:
        kinds: list[str] = []
        prefix: list[str] = []
        for token in stream:
            if token.type == "IDENT" and token.value in ("in", "null"):
                raise _SyntaxAt(token.line, token.column)
            if token.type == "IN" and re.match(
                r"[A-Za-z0-9_]", _source[0][token.end_pos : token.end_pos + 1]
            ):
                raise _SyntaxAt(token.line, token.column)
            if token.type == "LBRACE" and kinds and kinds[-1] in _OPERAND_END and not _qualified(kinds):
                raise _SyntaxAt(token.line, token.column)
            signed = token.type in (*_NUMBERS, "UINT_LIT") and token.value.startswith("-")
            for kind, column in ([("MINUS", token.column)] if signed else []) + [
                (token.type, token.column + signed)
            ]:
                operand_starts = not kinds or kinds[-1] not in _OPERAND_END
                if operand_starts and kind in ("BANG", "MINUS"):
                    if prefix and (
                        (prefix[-1] == "MINUS" and prefix[0] == "BANG") or kind == "BANG" != prefix[0]
                    ):
                        raise _SyntaxAt(token.line, column)
                    prefix.append(kind)
                elif operand_starts:
                    if prefix and prefix[0] == "BANG" and prefix[-1] == "MINUS" and kind not in _NUMBERS:
                        raise _SyntaxAt(token.line, column)
                    prefix = []
                kinds.append(kind)
            yield token


def _qualified(kinds: list[str]) -> bool:
    """Whether the kinds read end with `[.]name(.name)*` standing where an operand starts."""
    at = len(kinds) - 1
    if kinds[at] != "IDENT":
        return False
    while at >= 2 and kinds[at - 1] == "DOT" and kinds[at - 2] == "IDENT":
        at -= 2
    if at >= 1 and kinds[at - 1] == "DOT":
        at -= 1
    return at == 0 or kinds[at - 1] not in _OPERAND_END


_source = [""]


@cache
def _lark() -> Lark:
    """celpy's parser with `CELParser`'s options (not `debug`, which only prints), our lexing hooks."""
    grammar = (Path(celparser.__file__).parent / "cel.lark").read_text()
    return Lark(
        grammar,
        parser="lalr",
        start="expr",
        g_regex_flags=re.M,
        lexer_callbacks={"IDENT": _literals},
        postlex=_CelGoTokens(),
        propagate_positions=True,
        maybe_placeholders=False,
        priority="invert",
    )


def parse(expression: str) -> Expr:
    """Parse as the old path did, with the corrections; CelCompileError as `gpuplatform.cel.syntax`."""
    _source[0] = expression
    try:
        tree = _lark().parse(expression)
    except _SyntaxAt as exc:
        raise CelCompileError(_syntax_error(expression, exc.line, exc.column)) from None
    except UnexpectedInput as exc:
        line, column = exc.line, exc.column
        if isinstance(exc, UnexpectedToken) and exc.token.type == "$END":
            line = expression.count("\n") + 1
            column = len(expression) - (expression.rfind("\n") + 1) + 1
        raise CelCompileError(_syntax_error(expression, line, column)) from None
    builder = _Builder()
    built = builder.build(tree)
    if builder.error is not None:
        raise CelCompileError(builder.error)
    return built


def _pos(node: Tree[Any] | Token) -> tuple[int, int]:
    if isinstance(node, Token):
        return (node.line, node.column)
    return (node.meta.line, node.meta.column)


def _spine(member: Tree[Any]) -> list[Tree[Any]]:
    """The trees from a `member` down its left edge to its `primary` (they share a start)."""
    trees = [member]
    while trees[-1].data != "primary":
        trees.append(trees[-1].children[0])
    return trees


class _Builder:
    def __init__(self) -> None:
        self.error: str | None = None

    def defer(self, message: str) -> None:
        if self.error is None:
            self.error = message

    def build(self, node: Tree[Any]) -> Expr:
        pos = _pos(node)
        kids: list[Any] = list(node.children)
        name = node.data
        if name == "expr":
            if len(kids) == 3:
                return Call("_?_:_", [self.build(k) for k in kids], pos=pos)
            return self.build(kids[0])
        if name in ("conditionalor", "conditionaland"):
            return self.logical(node)
        if name in ("relation", "addition", "multiplication"):
            if len(kids) == 1:
                return self.build(kids[0])
            left: Tree[Any] = kids[0]
            return Call(_BINARY[left.data], [self.build(left.children[0]), self.build(kids[1])], pos=pos)
        if name == "unary":
            return self.unary(node)
        if name in ("member", "primary", "paren_expr"):
            return self.build(kids[0])
        if name == "member_dot":
            return Select(self.build(kids[0]), str(kids[1]), pos=pos)
        if name == "member_dot_arg":
            target = self.build(kids[0])
            args = self.exprlist(kids[2] if len(kids) > 2 else None)
            return self.member_call(target, str(kids[1]), args, pos)
        if name == "member_index":
            return Call("_[_]", [self.build(kids[0]), self.build(kids[1])], pos=pos)
        if name == "ident_arg":
            fn = str(kids[0])
            if fn in _RESERVED:
                self.defer(f"{_PREFIX}:{pos[0]}:{pos[1]}: reserved identifier: {fn}")
            args = self.exprlist(kids[1] if len(kids) > 1 else None)
            if fn == "has":
                if len(args) != 1 or not isinstance(args[0], Select):
                    self.defer(f"{_PREFIX}: invalid argument to has() macro")
                    return Call(fn, args, pos=pos)
                sel = args[0]
                return Select(sel.operand, sel.field, test_only=True, pos=pos)
            return Call(fn, args, pos=pos)
        if name == "ident":
            if str(kids[0]) in _RESERVED:
                self.defer(f"{_PREFIX}:{pos[0]}:{pos[1]}: reserved identifier: {kids[0]}")
            return Ident(str(kids[0]), pos=pos)
        if name in ("dot_ident", "dot_ident_arg"):
            self.defer(f"{_PREFIX}: leading-dot names are not supported")
            self.exprlist(kids[1] if len(kids) > 1 else None)
            return Ident(str(kids[0]), pos=pos)
        if name == "literal":
            return self.literal(kids[0], pos)
        if name == "list_lit":
            return ListLit(self.exprlist(kids[0] if kids else None), pos=pos)
        if name == "map_lit":
            entries: list[tuple[Expr, Expr]] = []
            if kids:
                items = [self.build(k) for k in kids[0].children]
                entries = list(zip(items[0::2], items[1::2], strict=True))
            return MapLit(entries, pos=pos)
        if name == "member_object":
            error_before = self.error
            self.build(kids[0])
            for value in kids[1].children[1::2] if len(kids) > 1 else []:
                self.build(value)
            if error_before is None:
                self.error = f"{_PREFIX}: message construction is not supported"
            return Ident("", pos=pos)
        raise AssertionError(f"unexpected Lark tree {name}")

    def logical(self, node: Tree[Any]) -> Expr:
        """A left-recursive `||`/`&&` chain, balanced as cel-go's `logicManager.balancedTree` (5)."""
        terms: list[Tree[Any]] = []
        while len(node.children) == 2:
            node, term = node.children
            terms.append(term)
        terms.append(node.children[0])
        terms.reverse()
        built = [self.build(t) for t in terms]
        function = "_||_" if node.data == "conditionalor" else "_&&_"

        def tree(lo: int, hi: int) -> Expr:
            mid = (lo + hi + 1) // 2
            left = built[mid] if mid == lo else tree(lo, mid - 1)
            right = built[mid + 1] if mid == hi else tree(mid + 1, hi)
            return Call(function, [left, right], pos=_pos(terms[lo]))

        return built[0] if len(built) == 1 else tree(0, len(built) - 2)

    def unary(self, node: Tree[Any]) -> Expr:
        """cel-go's `unary` rule (4), read off Lark's nested unary trees and signed number tokens.

        The post-lexer has refused every mix cel-go refuses; what is left is a run of one operator,
        or `!`s then the sign of a number.
        """
        ops: list[tuple[str, tuple[int, int]]] = []
        while len(node.children) == 2:
            op, node = node.children
            ops.append(("!" if op.data == "unary_not" else "-", _pos(op)))
        member = node.children[0]
        spine = _spine(member)
        first = spine[-1].children[0]
        token = first.children[0] if first.data == "literal" else None
        if token is not None and token.type in (*_NUMBERS, "UINT_LIT") and token.value.startswith("-"):
            ops.append(("-", _pos(token)))
            self.resign(spine, token.value[1:], (token.line, token.column + 1))
        signable = token is not None and token.type in _NUMBERS
        if ops and ops[-1][0] == "-" and signable and (len(ops) == 1 or ops[-2][0] == "!"):
            _, sign = ops.pop()
            self.resign(spine, "-" + token.value.lstrip("-"), sign)  # type: ignore[union-attr]
        operand = self.build(member)
        if len(ops) % 2 == 0:
            return operand
        return Call("!_" if ops[0][0] == "!" else "-_", [operand], pos=ops[0][1])

    @staticmethod
    def resign(spine: list[Tree[Any]], text: str, pos: tuple[int, int]) -> None:
        """Give the number token `text` at `pos`, and every tree of its member's left edge that pos."""
        literal = spine[-1].children[0]
        old = literal.children[0]
        literal.children[0] = Token(old.type, text, line=pos[0], column=pos[1])
        for tree in [*spine, literal]:
            tree.meta.line, tree.meta.column = pos

    def exprlist(self, node: Tree[Any] | None) -> list[Expr]:
        if node is None:
            return []
        return [self.build(k) for k in node.children]

    def member_call(self, target: Expr, fn: str, args: list[Expr], pos: tuple[int, int]) -> Expr:
        if fn in _MACROS and len(args) in (2, 3) and isinstance(args[0], Ident):
            if len(args) == 3 and fn != "map":
                self.defer(f"{_PREFIX}: {fn}() takes two arguments")
                return Call(fn, args, target=target, pos=pos)
            if len(args) == 3:
                return Comprehension("map", args[0].name, target, args[2], transform=args[1], pos=pos)
            return Comprehension(fn, args[0].name, target, args[1], pos=pos)
        if fn in _MACROS and len(args) in (2, 3):
            self.defer(f"{_PREFIX}: {fn}() variable name must be a simple identifier")
            return Call(fn, args, target=target, pos=pos)
        if fn == "bind" and isinstance(target, Ident) and target.name == "cel" and len(args) == 3:
            if not isinstance(args[0], Ident):
                self.defer(f"{_PREFIX}: cel.bind() variable name must be a simple identifier")
                return Call(fn, args, target=target, pos=pos)
            return Comprehension("bind", args[0].name, args[1], args[2], pos=pos)
        if isinstance(target, Ident) and target.name in ("strings", "sets", "math"):
            return Call(f"{target.name}.{fn}", args, pos=pos)
        return Call(fn, args, target=target, pos=pos)

    def literal(self, token: Token, pos: tuple[int, int]) -> Const:
        kind, text = token.type, token.value
        if kind == "INT_LIT":
            value = (
                int(text, 0) if "x" not in text.lower() else int(text.replace("0x", "").replace("0X", ""), 16)
            )
            if text.startswith("-") and "x" in text.lower():
                value = -int(text[3:], 16)
            if not -(2**63) <= value < 2**63:
                self.defer(f"{_PREFIX}: invalid int literal {text}")
            return Const(value, pos=pos)
        if kind == "UINT_LIT":
            return Const(Uint(int(text[:-1], 0)), pos=pos)
        if kind == "FLOAT_LIT":
            return Const(float(text), pos=pos)
        if kind in ("STRING_LIT", "MLSTRING_LIT"):
            return Const(str(celstr(token)), pos=pos)
        if kind == "BYTES_LIT":
            return Const(bytes(celbytes(token)), pos=pos)
        if kind == "BOOL_LIT":
            return Const(text == "true", pos=pos)
        return Const(None, pos=pos)
