"""Where gpuplatform's CEL parser deliberately differs from the cel-python (Lark) path it replaced.

Each test pins one row of docs/cel-fidelity.md ("The parser"): what cel-go v0.26.0 does (the parser
Kubernetes 1.36 runs), which we now do, and where cheap, what celpy did. Everything else is held
equal to the old path by `test_parser_differential.py`.
"""

from __future__ import annotations

import re

import pytest
from celpy.celparser import CELParser
from celpy.evaluation import celbytes, celstr
from lark import Token

from gpuplatform.cel import CelCompileError, DeviceSelector
from gpuplatform.cel.literals import Uint
from gpuplatform.cel.syntax import Call, Const, Ident, Select, parse
from tests.cel.test_parser_differential import dump


def error(expression: str) -> str:
    with pytest.raises(CelCompileError) as raised:
        parse(expression)
    return str(raised.value)


def syntax_error_at(expression: str) -> str:
    """The `line:column` of the syntax error `expression` raises."""
    found = re.search(r"<input>:(\d+:\d+): Syntax error", error(expression))
    assert found, error(expression)
    return found.group(1)


# --- the tree ---------------------------------------------------------------------------------


def test_true_and_false_keep_their_position() -> None:
    # celpy's lexer callback made new `true`/`false` tokens without a position: (None, None) in
    # the tree and `<input>:None:None:` in the checker's messages.
    tree = CELParser().parse("x || true")
    (old,) = tree.scan_values(lambda t: isinstance(t, Token) and t.type == "BOOL_LIT")
    assert (old.line, old.column) == (None, None)
    assert parse("x || true").args[1].pos == (1, 6)  # type: ignore[attr-defined]
    with pytest.raises(CelCompileError, match=r"<input>:1:1: found no matching overload for '_\+_'"):
        DeviceSelector("true + 1 == 2")


def test_a_syntax_error_at_the_end_is_reported_at_the_end() -> None:
    # cel-go reports `mismatched input '<EOF>'` where the text ends; Lark borrowed the last token's.
    assert error("device.driver ==").splitlines() == [
        "compilation failed: ERROR: <input>:1:17: Syntax error near '<end>'",
        " | device.driver ==",
        " | ................^",
    ]
    assert syntax_error_at("[1,\n") == "2:1"


@pytest.mark.parametrize("expression", ["x.in", "x.null", "in", "[in]", "a.b(null.in)"])
def test_in_and_null_are_keywords_wherever_they_stand(expression: str) -> None:
    # Lark's contextual lexer read them as names where no keyword could stand.
    error(expression)


def test_a_name_that_starts_with_in_is_one_name() -> None:
    # Lark read `x inputs` as `x in puts` (after an operand its lexer knew `in` but no names).
    assert syntax_error_at("x inputs") == "1:3"
    assert dump(parse("x in puts")) == dump(Call("@in", [Ident("x"), Ident("puts", pos=(1, 6))]))


@pytest.mark.parametrize(
    ("expression", "tree"),
    [
        ("!!x", Ident("x", pos=(1, 3))),
        ("--x", Ident("x", pos=(1, 3))),
        ("!!!x", Call("!_", [Ident("x", pos=(1, 4))])),
        ("--2", Const(2, pos=(1, 3))),
        ("- -2", Const(2, pos=(1, 4))),
        ("-(2)", Call("-_", [Const(2, pos=(1, 3))])),
        ("-1u", Call("-_", [Const(Uint(1), pos=(1, 2))])),
        ("- 1u", Call("-_", [Const(Uint(1), pos=(1, 3))])),
        ("!-2", Call("!_", [Const(-2, pos=(1, 2))])),
        ("- 9223372036854775808", Const(-(2**63))),
    ],
)
def test_prefix_operators_follow_cel_go(expression: str, tree: object) -> None:
    # parser.go: an even run of `!` or `-` cancels, the sign joins a number only directly after a
    # single `-`. The old builder nested every operator and folded `-` into any number: `-(2)` was
    # the constant -2, `-1u` the uint -1 and `- 1u` the uint 1.
    assert dump(parse(expression)) == dump(tree)


def test_negating_a_uint_is_a_type_error_as_in_kubernetes() -> None:
    with pytest.raises(CelCompileError, match=r"found no matching overload for '-_' applied to '\(uint\)'"):
        DeviceSelector("-1u == 1u")


@pytest.mark.parametrize(
    ("expression", "at"), [("!-x", "1:3"), ("-!x", "1:2"), ("!--1", "1:3"), ("!-1u", "1:3")]
)
def test_mixed_prefix_operators_are_syntax_errors(expression: str, at: str) -> None:
    # CEL.g4's `unary`: `'!'+ member` or `'-'+ member`; after `!` a `-` must begin a number.
    assert syntax_error_at(expression) == at


def test_and_or_chains_are_balanced_trees() -> None:
    # helper.go `balancedTree`: the middle operator at the root. A left-deep chain of 1,400 `||`
    # overflowed Python's recursion in the checker; Kubernetes accepts it.
    tree = parse("a || b || c || d")
    assert dump(tree) == dump(
        Call(
            "_||_",
            [
                Call("_||_", [Ident("a"), Ident("b", pos=(1, 6))]),
                Call("_||_", [Ident("c", pos=(1, 11)), Ident("d", pos=(1, 16))], pos=(1, 11)),
            ],
        )
    )
    assert DeviceSelector("||".join(["false"] * 1400) + "||true").matches("d", {"name": "x"})


@pytest.mark.parametrize("expression", ["if", "for(1)", "[1].all(while, true)", "cel.bind(var, 1, var)"])
def test_reserved_words_are_not_names(expression: str) -> None:
    # parser.go `reservedIds`; as field names they are fine (`x.if`).
    assert re.search(r"<input>:\d+:\d+: reserved identifier: \w+$", error(expression))
    assert dump(parse("x.if")) == dump(Select(Ident("x"), "if"))


@pytest.mark.parametrize(("expression", "at"), [("f(){}", "1:4"), ("null.T{}", "1:7"), ("a{}{}", "1:4")])
def test_message_construction_follows_only_a_qualified_name(expression: str, at: str) -> None:
    # CEL.g4's CreateMessage is `.? IDENT ('.' IDENT)* '{'`; after a name it is refused as before.
    assert syntax_error_at(expression) == at
    assert error("a.b{c: 1}") == "compilation failed: ERROR: <input>: message construction is not supported"


# --- the lexer --------------------------------------------------------------------------------


@pytest.mark.parametrize("expression", ['"\\q"', '"\\8"', '"\\400"', '"\\x4"', "'\\u12'", '"a\\"'])
def test_escapes_are_checked_when_lexing(expression: str) -> None:
    # CEL.g4's ESC_SEQ; celpy let any backslash through (`"\q"` was the two characters).
    assert syntax_error_at(expression) == "1:1"


def test_the_escapes_cel_go_adds_and_the_ones_celpy_got_wrong() -> None:
    assert parse('"\\?\\`\\X41"').value == "?`A"  # type: ignore[attr-defined]
    assert str(celstr(Token("STRING_LIT", '"\\?\\X41"'))) == "\\?\\X41"
    assert parse("'''a\nb'''").value == "a\nb"  # type: ignore[attr-defined]
    assert str(celstr(Token("MLSTRING_LIT", "'''a\nb'''"))) == "ab"  # celpy dropped the newline


def test_raw_strings_end_at_their_quote_and_newlines_are_normalised() -> None:
    assert syntax_error_at('r"\\"" == x') == "1:5"  # `r"\"` is a whole string, `"` opens another
    assert parse("'''a\r\nb\rc'''").value == "a\nb\nc"  # type: ignore[attr-defined]
    assert syntax_error_at("'a\rb'") == "1:1"


@pytest.mark.parametrize("expression", ['"\\ud800"', '"\\U00110000"'])
def test_a_code_point_that_is_not_unicode_is_refused(expression: str) -> None:
    # unescape.go: `invalid unicode code point`; celpy made a lone surrogate or crashed.
    assert error(expression) == "compilation failed: ERROR: <input>:1:1: invalid unicode code point"


def test_bytes_literals_decode_as_cel_go_does() -> None:
    assert parse("b'\\xff\\377é'").value == b"\xff\xff\xc3\xa9"  # type: ignore[attr-defined]
    assert parse("br'é\\n'").value == "é\\n".encode()  # type: ignore[attr-defined]
    assert error("b'\\u00ff'") == "compilation failed: ERROR: <input>:1:1: unable to unescape string"
    assert bytes(celbytes(Token("BYTES_LIT", "b'\\u00ff'"))) == b"\xff"  # celpy: the code point as a byte


@pytest.mark.parametrize(
    ("expression", "tree"),
    [
        ("07", Const(7)),
        ("1.e5", Select(Const(1), "e5")),
        ("2.x", Select(Const(2), "x")),
        ("18446744073709551615u", Const(Uint(2**64 - 1))),
    ],
)
def test_numbers_lex_as_cel_go_does(expression: str, tree: object) -> None:
    # A digit then `.` is a float only with digits after the dot; decimals are base 10 (the old
    # path crashed on int('07', 0)).
    assert dump(parse(expression)) == dump(tree)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("1.", "1:3"),
        ("18446744073709551616u", "invalid uint literal 18446744073709551616u"),
        ("1e999", "invalid double literal 1e999"),
        ("-9223372036854775809", "invalid int literal -9223372036854775809"),
    ],
)
def test_numbers_out_of_range_are_refused(expression: str, message: str) -> None:
    # parser.go ParseUint/ParseFloat: celpy accepted any uint and made 1e999 infinite.
    assert message in error(expression)


@pytest.mark.parametrize(("expression", "at"), [("x.5", "1:2"), ("!= x", "1:1"), ("a.b'x'", "1:3")])
def test_tokens_do_not_depend_on_where_they_stand(expression: str, at: str) -> None:
    # `.5` is a float, `!=` one token and `b'x'` a bytes literal wherever they stand; Lark's
    # contextual lexer split them where they could not stand, one column later.
    assert syntax_error_at(expression) == at


@pytest.mark.parametrize(("expression", "size"), [("[1, 2,]", 2), ("[,]", 0), ("{1: 2,}", 1), ("{,}", 0)])
def test_a_trailing_comma_is_allowed_in_list_and_map_literals(expression: str, size: int) -> None:
    # CEL.g4: `'[' listInit? ','? ']'` and `'{' mapInitializerList? ','? '}'`.
    node = parse(expression)
    assert len(getattr(node, "elements", None) or getattr(node, "entries", [])) == size


# --- limits -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("nest", "deepest"), [("(", 249), ("[", 249), ("f(", 249), ("x[", 249), ("a ? b : ", 249)]
)
def test_nesting_is_limited_as_cel_go_limits_it(nest: str, deepest: int) -> None:
    # parser.go: the recursionListener refuses more than 250 nested rule contexts of a kind (the
    # `expr` of the whole text is one); Kubernetes keeps the default. The old path raised a
    # RecursionError past ~100 levels.
    close = {"(": ")", "[": "]", "f(": ")", "x[": "]", "a ? b : ": ""}[nest]
    parse(nest * deepest + "1" + close * deepest)
    message = error(nest * (deepest + 1) + "1" + close * (deepest + 1))
    assert message == "compilation failed: ERROR: <input>:-1:0: expression recursion limit exceeded: 250"


def test_operators_are_limited_as_cel_go_limits_them() -> None:
    # parser.go `checkAndIncrementRecursionDepth`: 250 nested relations, sums, selections...
    parse(" + ".join(["1"] * 251))
    assert (
        error(" + ".join(["1"] * 252))
        == "compilation failed: ERROR: <input>:-1:0: max recursion depth exceeded"
    )
    assert "recursion limit exceeded" in error("1 + (" * 125 + "1" + ")" * 125)  # two `calc` per level
    parse("1 + (" * 124 + "1" + ")" * 124)
    parse(" || ".join(["x"] * 1000))  # `||` and `&&` chains are loops, not nesting
