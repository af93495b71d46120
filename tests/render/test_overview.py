"""Each platform's README.md: rendered by synth for every platform, deterministic, every link resolves."""

from __future__ import annotations

import json
import re
from functools import cache

import pytest

from gpuplatform.commands.synth import render_all
from gpuplatform.load.stacks import discover_stacks, load_stack
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.overview import OVERVIEW_FILE, render_overview
from gpuplatform.render.overview_mermaid import mermaid_block
from tests.conftest import REPO

_LINK = re.compile(r"\]\(([^)]+)\)")


@cache
def _rendered() -> dict[str, dict[str, bytes]]:
    out: dict[str, dict[str, bytes]] = {}
    for stack in discover_stacks(REPO / "stacks"):
        out |= render_all(load_stack(stack))
    return out


def _platforms() -> list[str]:
    return sorted(_rendered())


@pytest.mark.parametrize("platform", _platforms())
def test_every_platform_has_its_readme_in_the_lock_file(platform: str) -> None:
    files = _rendered()[platform]
    text = files[OVERVIEW_FILE].decode()
    assert "\r" not in text and text.endswith("\n") and not text.endswith("\n\n")
    assert OVERVIEW_FILE in json.loads(files["gpuplatform.lock.json"])["files"]


@pytest.mark.parametrize("platform", _platforms())
def test_every_link_resolves_to_a_rendered_file(platform: str) -> None:
    files = _rendered()[platform]
    links = _LINK.findall(files[OVERVIEW_FILE].decode())
    assert any(link.startswith("runbooks/") for link in links)
    for link in links:
        path, _, anchor = link.partition("#")
        if path.endswith("/"):
            assert any(f.startswith(path) for f in files), f"{link}: no rendered folder"
            continue
        assert path in files, f"{link}: no rendered file"
        if anchor:  # a heading of the runbook, as GitHub and GitLab name it
            headings = re.findall(r"^#+ (.+)$", files[path].decode(), re.M)
            slugs = {re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-") for h in headings}
            assert anchor in slugs, f"{link}: no such heading"


def test_the_readme_holds_the_diagram_and_is_the_same_bytes_each_time() -> None:
    (loaded,) = load_stack(REPO / "stacks" / "mixed-fleet.yaml")
    plan = plan_platform(loaded.platform)
    text = render_overview(plan)
    assert mermaid_block(plan) in text
    assert text == render_overview(plan_platform(loaded.platform))
    assert _rendered()["mixed-fleet"][OVERVIEW_FILE] == text.encode()


def test_the_prose_says_how_to_advance_and_roll_back() -> None:
    text = _rendered()["mixed-fleet"][OVERVIEW_FILE].decode()
    assert "**Active wave:** [`03-claims`](waves/03-claims/)" in text
    assert "**Next wave:** [`04-apps`](waves/04-apps/) changes: + class any-gpu.fleet.example.com;" in text
    assert "set `activeWave: apps`" in text and "set `activeWave: validate`" in text
    assert "| ▶ | [`03-claims`](waves/03-claims/) |" in text
    assert "| a100 | 3 | 08-cutover | 07-drain |" in text


def test_the_first_and_last_waves_say_there_is_no_way_back_or_on() -> None:
    (loaded,) = load_stack(REPO / "stacks" / "mixed-fleet.yaml")
    first = render_overview(plan_platform(loaded.platform.model_copy(update={"active_wave": "base"})))
    last = render_overview(plan_platform(loaded.platform.model_copy(update={"active_wave": "cutover"})))
    assert "To roll back" not in first and "To advance" in first
    assert "This is the last wave" in last and "To advance" not in last
