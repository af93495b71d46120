"""The pools x waves picture: colours follow the plan, the active wave is marked, the graph is sane."""

from __future__ import annotations

import re

import pytest

from gpuplatform.load.stacks import load_stack
from gpuplatform.model import NodePool, Platform, Wave
from gpuplatform.plan.waves import Plan, plan_platform
from gpuplatform.render.overview_mermaid import CLASSES, MAX_LINKS, mermaid_block, overview_mermaid
from tests.conftest import REPO

_NODE = re.compile(r'^  ([A-Za-z][A-Za-z0-9_]*)\["([^"]*)"\]$')
_LINK = re.compile(r"^  [A-Za-z][A-Za-z0-9_]*(?: (?:-->|---) [A-Za-z][A-Za-z0-9_]*)+$")
_CLASSDEF = re.compile(r"^  classDef ([a-z]+) (\S.*)$")
_CLASS = re.compile(r"^  class ([A-Za-z0-9_,]+) ([a-z]+)$")


def parsed(text: str) -> tuple[dict[str, str], dict[str, set[str]], int]:
    """(node id -> label, node id -> classes, links) of a diagram; fails on any other kind of line."""
    lines = text.splitlines()
    assert lines[0] == "flowchart LR" and lines[1].startswith("  %% ")
    labels: dict[str, str] = {}
    classes: dict[str, set[str]] = {}
    defined: set[str] = set()
    linked: list[str] = []
    for line in lines[2:]:
        if node := _NODE.match(line):
            assert node[1] not in labels, f"node declared twice: {line}"
            labels[node[1]] = node[2]
        elif _LINK.match(line):
            linked += line.split()[::2]
        elif classdef := _CLASSDEF.match(line):
            defined.add(classdef[1])
        elif cls := _CLASS.match(line):
            assert cls[2] in defined, f"class {cls[2]} is used before it is defined"
            for node_id in cls[1].split(","):
                classes.setdefault(node_id, set()).add(cls[2])
        else:
            raise AssertionError(f"not a line the renderer writes: {line!r}")
    assert set(linked) <= set(labels), "a link names an undeclared node"
    assert set(classes) <= set(labels), "a class names an undeclared node"
    return labels, classes, len(linked) - sum(1 for line in lines if _LINK.match(line))


@pytest.fixture(scope="module")
def mixed() -> Plan:
    (loaded,) = load_stack(REPO / "stacks" / "mixed-fleet.yaml")
    return plan_platform(loaded.platform)


def _cells(plan: Plan) -> dict[tuple[str, int], set[str]]:
    """(pool, wave index) -> the classes of its cell, for rows that name one pool."""
    labels, classes, _ = parsed(overview_mermaid(plan))
    rows = {node_id: label for node_id, label in labels.items() if re.fullmatch(r"p\d+", node_id)}
    return {(pool, s.index): classes[f"{row}w{s.index}"] for row, pool in rows.items() for s in plan.waves}


def test_every_class_is_defined_and_every_node_is_declared(mixed: Plan) -> None:
    labels, classes, links = parsed(overview_mermaid(mixed))
    assert set(classes) == set(labels), "every node is styled"
    defined = {
        line.split()[1]
        for line in overview_mermaid(mixed).splitlines()
        if line.lstrip().startswith("classDef ")
    }
    assert set().union(*classes.values()) == defined == set(CLASSES) - {"absent"}, (
        "no pool of it is created later"
    )
    assert links == 5 * len(mixed.waves), "the wave row, three pool rows and the gates row"


def test_a_pool_is_coloured_by_its_allocator_in_each_wave(mixed: Plan) -> None:
    # GIVEN the mixed fleet: h100 moves in 01-pilot, l40s in 06-scale, a100 is drained in 07-drain
    cells = _cells(mixed)
    for pool in mixed.platform.node_pools:
        for s in mixed.waves:
            # THEN each cell carries the allocator the plan gives the pool in that wave
            want = "drain" if pool.name in s.drains else s.pool_modes[pool.name]
            assert cells[(pool.name, s.index)] - {"now"} == {want}, (pool.name, s.name)
    row = [cells[("l40s", s.index)] - {"now"} for s in mixed.waves]
    assert row == [{"legacy"}] * 6 + [{"dra"}] * 3, "legacy until its migratesIn wave (06-scale), DRA from it"
    assert cells[("a100", 7)] == {"drain"} and cells[("a100", 8)] == {"dra"}


def test_the_active_wave_marker_moves_and_nothing_else_does(mixed: Plan) -> None:
    # GIVEN the same platform with activeWave moved back from claims (03) to pilot (01): a rollback
    back = plan_platform(mixed.platform.model_copy(update={"active_wave": "pilot"}))
    before, after = overview_mermaid(mixed).splitlines(), overview_mermaid(back).splitlines()
    # THEN only the active wave's header and the marker line differ: the rollback reads the same picture
    changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    assert changed == [
        ('  w1["01-pilot<br/>pilot-pool"]', '  w1["01-pilot<br/>pilot-pool<br/>▶ active"]'),
        ('  w3["03-claims<br/>native-claim-pilot<br/>▶ active"]', '  w3["03-claims<br/>native-claim-pilot"]'),
        ("  class w3,p0w3,p1w3,p2w3,g3 now", "  class w1,p0w1,p1w1,p2w1,g1 now"),
    ]


def test_each_wave_shows_its_gates_by_phase(mixed: Plan) -> None:
    labels, _, _ = parsed(overview_mermaid(mixed))
    assert labels["g0"] == "pre rollback-safety"
    assert labels["g8"].split("<br/>") == [
        "post allocator-exclusivity",
        "post claim-pilot",
        "post inventory",
        "post operands",
    ]


def wide_plan(pools: int, waves: int) -> Plan:
    """A platform with `waves` waves and `pools` pools, one moving in each wave: the most rows."""
    (loaded,) = load_stack(REPO / "stacks" / "mixed-fleet.yaml")
    p = loaded.platform
    stages = [Wave(name=f"w{i:02d}", stage="scale") for i in range(waves)]
    template = p.node_pools[0]
    node_pools = [
        NodePool.model_validate(
            template.model_dump(by_alias=True)
            | {"name": f"pool-{i:03d}", "nodes": [f"n-{i}"], "migratesIn": stages[i % waves].name}
        )
        for i in range(pools)
    ]
    update = {
        "waves": stages,
        "node_pools": node_pools,
        "workloads": (),
        "nim_services": (),
        "active_wave": "w01",
    }
    wide: Platform = p.model_copy(update=update)
    return plan_platform(wide)


def test_a_large_platform_stays_within_what_github_renders() -> None:
    # GIVEN the largest plan a spec may ask for: 32 waves, a pool moving in each (and repeats)
    plan = wide_plan(pools=64, waves=32)
    # WHEN it is drawn
    text = overview_mermaid(plan)
    labels, _, links = parsed(text)
    # THEN it stays under the link cap and well under GitHub's 50,000 characters, and says what it left out
    assert links <= MAX_LINKS and len(text) < 50_000
    rows = [n for n in labels if re.fullmatch(r"p\d+", n)]
    assert len(rows) == MAX_LINKS // 32 - 2
    assert labels["more"] == f"+{64 - 2 * len(rows)} more pools: see the table"
    assert labels["p0"] == "pool-000, pool-032"


def test_many_pools_on_one_path_share_a_labelled_row() -> None:
    plan = wide_plan(pools=20, waves=4)
    labels, _, _ = parsed(overview_mermaid(plan))
    assert labels["p0"] == "pool-000, pool-004, pool-008 +2 more"
    assert "more" not in labels


def test_the_block_is_the_diagram_fenced(mixed: Plan) -> None:
    assert mermaid_block(mixed) == f"```mermaid\n{overview_mermaid(mixed)}```\n"
    assert overview_mermaid(mixed) == overview_mermaid(plan_platform(mixed.platform))
