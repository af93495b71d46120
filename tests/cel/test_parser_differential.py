"""gpuplatform's CEL parser against the Lark parser it replaced (`tests/cel/lark_oracle.py`).

Every expression of Kubernetes' conformance tables, every selector the stacks render, generated
expressions over the whole grammar, every pair of operators and of refused constructs: the same
tree (node types, fields, positions) or the same error message. Every string constant in the
sources and random token soup: the same outcome, except where the two lexers legitimately differ
(docs/cel-fidelity.md, "The parser"); `test_parser_differences.py` pins each difference.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import fields
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuplatform.cel.errors import CelCompileError
from gpuplatform.cel.syntax import Expr, parse
from gpuplatform.load.stacks import load_stack
from gpuplatform.policy.targets import selector_targets
from tests.cel import lark_oracle
from tests.conftest import REPO, SHARED

SETTINGS = settings(
    max_examples=150, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def dump(node: Any) -> Any:
    """A structural, comparable form of a tree: node type, `pos`, every field; typed constants."""
    if isinstance(node, Expr):
        parts = [dump(getattr(node, f.name)) for f in fields(node) if f.name != "pos"]
        return (type(node).__name__, node.pos, *parts)
    if isinstance(node, list | tuple):
        return [dump(item) for item in node]
    return (type(node).__name__, repr(node))


def outcome(parser: Any, text: str) -> tuple[str, Any]:
    try:
        return ("tree", dump(parser(text)))
    except CelCompileError as exc:
        return ("error", str(exc))


def assert_same(text: str) -> None:
    assert outcome(parse, text) == outcome(lark_oracle.parse, text), text


#: Texts where the two lexers read different tokens or values (docs/cel-fidelity.md, "The parser").
LEXICAL_DIFFERENCES = re.compile(
    r"\\"  # escapes and raw strings: cel-go checks escapes when lexing, celpy let any through
    r"|\r"  # a carriage return: not allowed in a one-line string, and normalised in the others
    r"|(?<![rR])(?:'''|\"\"\")"  # celpy dropped the newlines of a triple-quoted string
    r"|[0-9]\.(?![0-9])"  # `1.` and `1.e5`: an int and a dot in cel-go, a float in celpy
    r"|(?<![\w.])0[0-9]"  # `07`: 7 in cel-go; the old path crashed on int('07', 0)
    r"|[0-9]{20}[uU]|[eE][-+]?[0-9]{3}"  # a uint or a double out of range: celpy took them
    r"|,(?:\s|//[^\n]*)*[\]}]|[\[{](?:\s|//[^\n]*)*,"  # trailing comma, allowed by cel-go
)
#: Texts where only the position of a syntax error differs.
POSITION_DIFFERENCES = re.compile(
    r"\.[0-9]"  # `.5` is a float wherever it stands in cel-go: `x.5` fails at the dot
    r"|!="  # `!=` is one token where an operand should start too: fails at `!`, not at `=`
    r"|[bBrR][\"']"  # `b'x'` is a bytes literal after `.` too: `a.b'x'` fails at `b`, not at the quote
)


def assert_same_outcome(text: str) -> None:
    """The same tree or error, unless a documented lexical difference applies; never a crash of ours."""
    new = outcome(parse, text)
    try:
        old = outcome(lark_oracle.parse, text)
    except (ValueError, TypeError):
        return  # the old path crashed (`07`, bytes escapes above 255); the new one answered
    if LEXICAL_DIFFERENCES.search(text):
        return
    assert new[0] == old[0], (text, new, old)
    if new[0] == "tree" or not POSITION_DIFFERENCES.search(text):
        assert new == old, text


CASES = SHARED / "conformance" / "cel_cases.json"


@pytest.mark.skipif(not CASES.exists(), reason=f"{CASES} is absent (only CI and the dev box have shared/)")
def test_every_conformance_expression_parses_the_same() -> None:
    data = json.loads(CASES.read_text())
    for table in ("cases", "validation_cases", "library_cases"):
        for case in data[table]:
            assert_same(case["expression"])


def test_every_string_in_the_sources_parses_the_same() -> None:
    """Every string constant in tests/, stacks/ and benchmarks/: CEL, paths, messages, versions."""
    texts: set[str] = set()
    for folder in ("tests", "stacks", "benchmarks"):
        for source in sorted((REPO / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(source.read_text())):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 4096:
                    texts.add(node.value)
    assert len(texts) > 1000
    for text in sorted(texts):
        assert_same_outcome(text)


@pytest.mark.parametrize(
    "stack", ["stacks/reference.py", "stacks/mixed-fleet.yaml", "stacks/nim-lab.yaml", "benchmarks/fleet.py"]
)
def test_every_rendered_selector_parses_the_same(stack: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLEET_NODES", "11")
    expressions = {
        e
        for loaded in load_stack(REPO / stack)
        for t in selector_targets(loaded.platform)
        for _, e in t.expressions
    }
    assert expressions
    for expression in sorted(expressions):
        assert_same(expression)


# --- generated expressions over the whole grammar ---------------------------------------------

NAMES = st.sampled_from(
    ["device", "x", "a", "b2", "_v", "cel", "strings", "sets", "math", "has", "index", "nullable", "trueish"]
)
FIELDS = st.sampled_from(["driver", "attributes", "capacity", "name", "size", "if", "for_", "t1", "matches"])
ESCAPES = [
    "\\n",
    "\\t",
    "\\\\",
    '\\"',
    "\\'",
    "\\a",
    "\\b",
    "\\f",
    "\\r",
    "\\v",
    "\\x41",
    "\\xfF",
    "\\101",
    "\\377",
]
WIDE_ESCAPES = ["\\u00e9", "\\u263A", "\\U0001F600"]
CHARS = [*"aZ9 _-.:/,;#$&|()[]{}é☺", "😀", "\t"]


@st.composite
def string_literals(draw: st.DrawFn) -> str:
    """String and bytes literals of every quoting, with the escapes both lexers decode alike."""
    quote = draw(st.sampled_from(['"', "'", '"""', "'''"]))
    raw = draw(st.booleans())
    as_bytes = draw(st.integers(0, 3)) == 0
    if raw:
        chars = [*CHARS, "\\q", "\\d", *(["\n"] if len(quote) == 3 else [])]
    else:
        chars = [*CHARS, *ESCAPES, *ESCAPES, *([] if as_bytes else WIDE_ESCAPES)]
    chars += ["'" if quote[0] == '"' else '"', *([quote[0]] if len(quote) == 3 else [])]
    if raw and as_bytes:
        chars = [c for c in chars if c.isascii()]
    body = "".join(draw(st.lists(st.sampled_from(chars), max_size=8)))
    if len(quote) == 3 and body.endswith(quote[0]):
        body += "x"
    prefix = draw(st.sampled_from(["b", "B"])) if as_bytes else ""
    prefix += draw(st.sampled_from(["r", "R"])) if raw else ""
    return f"{prefix}{quote}{body}{quote}"


SIGNABLE = st.one_of(
    st.integers(0, 2**63 - 1).map(str),
    st.integers(0, 2**63 - 1).map(lambda v: f"0x{v:x}"),
    st.sampled_from(["9223372036854775807", "0x7fffffffffffffff", "0.0"]),
    st.builds(lambda a, b: f"{a}.{b}", st.integers(0, 999), st.integers(0, 999)),
    st.builds(
        lambda a, s, e: f"{a}e{s}{e}", st.integers(0, 99), st.sampled_from(["", "+", "-"]), st.integers(0, 99)
    ),
    st.builds(lambda a, b, e: f"{a}.{b}E-{e}", st.integers(0, 9), st.integers(0, 9), st.integers(0, 99)),
    st.integers(0, 999).map(lambda v: f".{v}"),
)
UINTS = st.one_of(
    st.integers(0, 2**64 - 1).map(lambda v: f"{v}u"), st.integers(0, 2**64 - 1).map(lambda v: f"0x{v:X}U")
)
LEAVES: st.SearchStrategy[list[str]] = st.one_of(
    st.one_of(SIGNABLE, UINTS).map(lambda t: [t]),
    string_literals().map(lambda t: [t]),
    string_literals().map(lambda t: [t]),
    st.sampled_from([["true"], ["false"], ["null"]]),
    NAMES.map(lambda n: [n]),
)
BINARY = ["||", "&&", "==", "!=", "<", "<=", ">", ">=", "in", "+", "-", "*", "/", "%"]


def _joined(parts: list[list[str]], separator: str = ",") -> list[str]:
    out: list[str] = []
    for i, part in enumerate(parts):
        out += ([separator] if i else []) + part
    return out


def _operations(first: list[str], rest: list[tuple[str, list[str]]]) -> list[str]:
    return [*first, *(token for op, operand in rest for token in (op, *operand))]


def _compound(inner: st.SearchStrategy[list[str]], refusals: bool) -> st.SearchStrategy[list[str]]:
    """Every construct of the grammar over `inner`; with `refusals`, also what both parsers refuse:
    reserved words and keywords as names, mixed prefix operators, an int out of range, message
    construction, leading dots, a macro variable that is not a name."""
    operand = st.one_of(LEAVES, inner)
    args = st.lists(inner, max_size=3).map(_joined)
    var = NAMES.map(lambda n: [n])
    macro = st.sampled_from(["all", "exists", "exists_one", "filter", "map"])
    operations = st.lists(st.tuples(st.sampled_from(BINARY), operand), min_size=1, max_size=3)
    choices = [
        st.builds(_operations, operand, operations),
        st.builds(_operations, operand, operations),
        st.builds(_joined, st.lists(inner, min_size=2, max_size=6), st.sampled_from(["||", "&&"])),
        st.builds(lambda c, t, f: [*c, "?", *t, ":", *f], inner, inner, inner),
        st.builds(lambda op, n, a: [op] * n + a, st.sampled_from(["!", "-"]), st.integers(1, 3), inner),
        st.builds(lambda n, number: ["!"] * n + ["-", number], st.integers(0, 2), SIGNABLE),
        st.builds(lambda n: [*n, "-", "9223372036854775808"], st.sampled_from([[], ["!"], ["!", "!"]])),
        inner.map(lambda a: ["(", *a, ")"]),
        st.builds(lambda a, f: [*a, ".", f], inner, FIELDS),
        st.builds(lambda a, i: [*a, "[", *i, "]"], inner, inner),
        st.builds(
            lambda a, f, x: [*a, ".", f, "(", *x, ")"], inner, st.one_of(FIELDS, st.just("bind")), args
        ),
        st.builds(lambda f, x: [f, "(", *x, ")"], st.one_of(NAMES, st.just("size")), args),
        st.builds(lambda r, m, v, b: [*r, ".", m, "(", *v, ",", *b, ")"], inner, macro, var, inner),
        st.builds(
            lambda r, v, t, b: [*r, ".", "map", "(", *v, ",", *t, ",", *b, ")"], inner, var, inner, inner
        ),
        st.builds(lambda v, i, b: ["cel", ".", "bind", "(", *v, ",", *i, ",", *b, ")"], var, inner, inner),
        st.builds(
            lambda ns, x: [ns, ".", "f", "(", *x, ")"], st.sampled_from(["strings", "sets", "math"]), args
        ),
        st.builds(lambda a, f: ["has", "(", "(", *a, ")", ".", f, ")"], inner, FIELDS),
        st.lists(inner, max_size=3).map(lambda items: ["[", *_joined(items), "]"]),
        st.lists(st.tuples(inner, inner), max_size=3).map(
            lambda kv: ["{", *_joined([[*k, ":", *v] for k, v in kv]), "}"]
        ),
    ]
    if refusals:
        odd = st.sampled_from(["if", "in", "null", "for"])
        choices += [
            odd.map(lambda n: [n]),
            st.builds(lambda a, f: [*a, ".", f], inner, st.sampled_from(["in", "null", "true"])),
            st.builds(
                lambda ops, a: [*ops, *a],
                st.lists(st.sampled_from(["!", "-"]), min_size=2, max_size=3),
                inner,
            ),
            st.sampled_from(["9223372036854775808", "0x8000000000000000", "18446744073709551616"]).map(
                lambda v: [v]
            ),
            st.builds(lambda a, f: ["has", "(", *a, ".", f, ")"], inner, FIELDS),
            st.builds(lambda n, v: [n, ".", "T", "{", "f", ":", *v, "}"], NAMES, inner),
            st.builds(lambda a, v: [*a, "{", "f", ":", *v, "}"], inner, inner),
            NAMES.map(lambda n: [".", n]),
            st.builds(lambda r, m, v, b: [*r, ".", m, "(", *v, ",", *b, ")"], inner, macro, inner, inner),
        ]
    return st.one_of(*choices)


def _grammar(refusals: bool) -> st.SearchStrategy[list[str]]:
    tokens: st.SearchStrategy[list[str]] = st.deferred(
        lambda: st.one_of(LEAVES, LEAVES, LEAVES, LEAVES, LEAVES, LEAVES, _compound(tokens, refusals))
    )
    return tokens


TOKENS = st.one_of(_grammar(refusals=False), _grammar(refusals=False), _grammar(refusals=True))
SPACES = ["", " ", " ", "  ", "\n", " \n\t ", " // note\n", "\f"]


@st.composite
def expressions(draw: st.DrawFn) -> str:
    """Generated tokens joined by whitespace, comments and newlines (a space where two would merge)."""
    tokens = draw(TOKENS)
    spaces = draw(st.randoms(use_true_random=False))
    text = tokens[0]
    for token in tokens[1:]:
        space = spaces.choice(SPACES)
        if (
            not space
            and (text[-1].isalnum() or text[-1] in "_.")
            and (token[0].isalnum() or token[0] in "_.\"'")
        ):
            space = " "
        text += space + token
    return text


@SETTINGS
@given(expressions())
def test_generated_expressions_parse_the_same(text: str) -> None:
    assert_same(text)


def test_every_pair_of_operators_nests_the_same() -> None:
    """Precedence and associativity, exhaustively: `a op b op c` for every ordered pair."""
    for first in [*BINARY, "?"]:
        for second in BINARY:
            if first == "?":
                assert_same(f"a ? b {second} c : d {second} e")
            else:
                assert_same(f"a {first} b {second} c")
                assert_same(f"!a {first} -b {second} c[0].d")


REFUSED = [
    "has(1)",
    ".x",
    "a.T{f: 1}",
    "if",
    "[1].all(1, 2)",
    "9223372036854775808",
    "x.in",
    "!-x",
    "null.T{}",
]


def test_the_first_of_two_refusals_is_reported() -> None:
    """Which error wins: syntax errors first, then the first other error met (message
    construction and leading dots before what they contain)."""
    for first in REFUSED:
        for second in REFUSED:
            assert_same(f"f({first}, {second})")
            assert_same(f"({first}).g({second}) + {first}")


# --- token soup -----------------------------------------------------------------------------

WORDS = [
    "x",
    "a.b",
    "in",
    "null",
    "true",
    "false",
    "if",
    "has",
    "all",
    "map",
    "cel",
    "0",
    "1",
    "07",
    "1.",
    "1.5",
    ".5",
    "1e3",
    "1u",
    "-1u",
    "0x1F",
    "'s'",
    '"t"',
    "'é'",
]
SOUP = st.sampled_from(
    [
        *BINARY,
        *WORDS,
        *"!?:.,()[]{}=&|@`#",
        *" \n\r\v\t\fé",
        "//c\n",
        "'''m\nl'''",
        "r'\\'",
        "b'\\xff'",
        '"\\q"',
    ]
)


@settings(max_examples=500, derandomize=True, deadline=None)
@given(st.lists(SOUP, max_size=14).map("".join))
def test_token_soup_has_the_same_outcome(text: str) -> None:
    assert_same_outcome(text)
