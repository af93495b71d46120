"""docs/sdk.md holds: its YAML and its Python build the same platform, and every verb it names
is one a Platform has."""

from __future__ import annotations

import re
from pathlib import Path

import gpuplatform as gp
from gpuplatform.load.documents import platform_document
from gpuplatform.load.stacks import load_stack
from tests.conftest import REPO

PAGE = (REPO / "docs" / "sdk.md").read_text()


def _blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", PAGE, flags=re.M | re.S)


def test_the_yaml_and_the_python_of_the_page_are_one_platform(tmp_path: Path) -> None:
    # GIVEN the page's YAML spec and its Python stack
    spec = tmp_path / "lab.yaml"
    spec.write_text(_blocks("yaml")[0])
    stack = tmp_path / "lab.py"
    stack.write_text(_blocks("python")[0])
    # WHEN both are loaded
    (from_yaml,) = load_stack(spec)
    (from_python,) = load_stack(stack)
    # THEN they are the same platform, down to the spec document the lock file digests
    assert from_python.platform == from_yaml.platform
    assert platform_document(from_python.platform) == platform_document(from_yaml.platform)


def test_every_verb_in_the_table_is_a_platform_method() -> None:
    named = re.findall(r"^\| `platform\.(\w+)\(", PAGE, flags=re.M)
    assert named == ["plan", "transition", "render", "synth", "check", "simulate", "capacity", "rehearse"]
    assert [n for n in named if not callable(getattr(gp.Platform, n, None))] == []
