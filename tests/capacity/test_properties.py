"""Property: taking capacity away never turns "does not fit" into "fits"."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuplatform.capacity.report import plan_capacity
from gpuplatform.model import ClaimTemplate, Platform
from gpuplatform.plan.waves import plan_platform
from tests.capacity.fleets import platform, pool, provisioned, workload

_POOL = st.tuples(st.integers(1, 3), st.integers(1, 8), st.sampled_from([None, "pilot", "move"]))
_WORKLOAD = st.tuples(st.integers(1, 4), st.integers(1, 8), st.sampled_from(["move", "cutover"]))


def _platform(
    pools: list[tuple[int, int, str | None]], loads: list[tuple[int, int, str]], claims: int
) -> Platform:
    return platform(
        [pool(f"p{i}", n, g, m) for i, (n, g, m) in enumerate(pools)],
        [workload(f"w{i}", r, g, moves_in=m) for i, (r, g, m) in enumerate(loads)],
        [ClaimTemplate(name="one", tier="full", claims=claims)],
    )


def _fits(p: Platform) -> list[bool]:
    return [w.fits for w in plan_capacity(plan_platform(p))]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pools=st.lists(_POOL, min_size=1, max_size=3),
    loads=st.lists(_WORKLOAD, max_size=4),
    claims=st.integers(0, 3),
    shrink=st.data(),
)
def test_removing_capacity_never_makes_a_wave_fit(
    pools: list[tuple[int, int, str | None]],
    loads: list[tuple[int, int, str]],
    claims: int,
    shrink: st.DataObject,
) -> None:
    # GIVEN a fleet and the same fleet with one node removed or one GPU fewer per node in one pool
    index = shrink.draw(st.integers(0, len(pools) - 1))
    nodes, gpus, moves = pools[index]
    smaller = list(pools)
    if shrink.draw(st.booleans()) and nodes > 1:
        smaller[index] = (nodes - 1, gpus, moves)
    elif gpus > 1:
        smaller[index] = (nodes, gpus - 1, moves)
    # WHEN both are placed, wave by wave
    before, after = _fits(_platform(pools, loads, claims)), _fits(_platform(smaller, loads, claims))
    # THEN no wave that did not fit fits with less
    assert all(b or not a for b, a in zip(before, after, strict=True))


_PROVISIONED = st.tuples(
    st.integers(0, 2),
    st.integers(0, 3),
    st.sampled_from(["karpenter", "node-group"]),
    st.sampled_from([None, "pilot", "move"]),
)


def _elastic(
    static: list[tuple[int, int, str | None]],
    elastic: list[tuple[int, int, str, str | None]],
    loads: list[tuple[int, int, str]],
    claims: int,
) -> Platform:
    pools = [pool(f"p{i}", n, g, m) for i, (n, g, m) in enumerate(static)]
    pools += [
        provisioned(f"e{i}", kind, migrates_in=m, min_nodes=floor, max_nodes=floor + more)
        for i, (floor, more, kind, m) in enumerate(elastic)
    ]
    return platform(
        pools,
        [workload(f"w{i}", r, g, moves_in=m) for i, (r, g, m) in enumerate(loads)],
        [ClaimTemplate(name="one", tier="full", claims=claims)],
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    static=st.lists(_POOL, max_size=2),
    elastic=st.lists(_PROVISIONED, min_size=1, max_size=2),
    loads=st.lists(_WORKLOAD, max_size=4),
    claims=st.integers(0, 3),
    shrink=st.data(),
)
def test_a_lower_provisioner_limit_never_makes_a_wave_fit(
    static: list[tuple[int, int, str | None]],
    elastic: list[tuple[int, int, str, str | None]],
    loads: list[tuple[int, int, str]],
    claims: int,
    shrink: st.DataObject,
) -> None:
    # GIVEN provisioner pools (between a floor and a limit) and the same with one limit lowered
    index = shrink.draw(st.integers(0, len(elastic) - 1))
    floor, more, kind, moves = elastic[index]
    limit = max(floor + more - 1, 0)
    lower = list(elastic)
    lower[index] = (min(floor, limit), limit - min(floor, limit), kind, moves)
    # WHEN both are placed, wave by wave
    before = _fits(_elastic(static, elastic, loads, claims))
    after = _fits(_elastic(static, lower, loads, claims))
    # THEN no wave that did not fit fits with a lower limit
    assert all(b or not a for b, a in zip(before, after, strict=True))
