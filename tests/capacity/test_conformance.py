"""Kubernetes' own allocator test table, transcribed into data, run against gpuplatform.capacity."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpuplatform.capacity.allocator import AllocationError, Allocator, Features
from gpuplatform.capacity.claims import parse_claim, parse_class
from gpuplatform.kube.nodes import Node

DATA = json.loads((Path(__file__).parent / "allocator_cases.json").read_text())
CASES: list[dict[str, Any]] = DATA["cases"]


def _canonical(result: dict[str, Any]) -> str:
    devices = sorted(json.dumps(r, sort_keys=True) for r in result["devices"]["results"])
    config = [json.dumps(c, sort_keys=True) for c in result["devices"].get("config") or []]
    selector = result.get("nodeSelector")
    if selector is not None:
        terms = []
        for term in selector["nodeSelectorTerms"]:
            terms.append(
                {
                    k: sorted(
                        json.dumps({**r, "values": sorted(r.get("values") or [])}, sort_keys=True)
                        for r in term.get(k) or []
                    )
                    for k in ("matchExpressions", "matchFields")
                }
            )
        selector = sorted(json.dumps(t, sort_keys=True) for t in terms)
    return json.dumps([devices, config, selector])


def run_case(case: dict[str, Any]) -> tuple[list[dict[str, Any]] | None, str | None]:
    """Allocate as the upstream test does; returns (results, error text)."""
    features = set(case["features"])
    allocator = Allocator(
        [parse_class(c) for c in case["classes"]],
        case["slices"],
        allocated=[tuple(d) for d in case.get("allocatedDevices", [])],
        features=Features(
            admin_access="DRAAdminAccess" in features,
            prioritized_list="DRAPrioritizedList" in features,
            device_taints="DRADeviceTaints" in features,
        ),
    )
    meta = case["node"]["metadata"]
    node = Node(meta["name"], meta.get("labels") or {})
    try:
        return allocator.allocate(node, [parse_claim(c) for c in case["claims"]]), None
    except AllocationError as exc:
        return None, str(exc)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_upstream_case(case: dict[str, Any]) -> None:
    results, error = run_case(case)
    expect = case["expect"]
    if "error" in expect:
        assert error is not None and expect["error"] in error, error
        return
    assert error is None, error
    if not expect["results"]:
        assert not results
        return
    assert results is not None
    assert sorted(map(_canonical, results)) == sorted(map(_canonical, expect["results"]))


def test_the_table_is_large_and_says_what_it_left_out() -> None:
    assert len(CASES) >= 90
    assert all(item["why"] for item in DATA["notExpressed"])
    assert not {c["name"] for c in CASES} & {item["name"] for item in DATA["notExpressed"]}
