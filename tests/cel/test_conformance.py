"""Runs Kubernetes' own DRA CEL tables (shared/conformance/cel_cases.json) for releases 1.34–1.36."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpuplatform.cel import CelCompileError, CelError, CelEvaluationError, DeviceSelector
from gpuplatform.cel.interpreter import evaluate
from gpuplatform.cel.runtime import EvalError
from gpuplatform.cel.syntax import parse
from tests.cel.known_differences import KNOWN_DIFFERENCES

CASES_FILE = Path(__file__).resolve().parents[2].parent / "shared" / "conformance" / "cel_cases.json"
RELEASES = ("1.34", "1.35", "1.36")


def _load() -> dict[str, Any]:
    if not CASES_FILE.exists():
        return {}
    return dict(json.loads(CASES_FILE.read_text()))


DATA = _load()
needs_file = pytest.mark.skipif(
    not DATA, reason=f"{CASES_FILE} is absent (only CI and the dev box have shared/)"
)


def _runs() -> list[Any]:
    runs = []
    for case in DATA.get("cases", []):
        for release in (r for r in case["k8s_versions"] if r in RELEASES):
            lists = case["features"].get("DRAListTypeAttributes")
            modes = [False, True] if lists == "both" else [bool(lists)]
            for mode in modes if release == "1.36" else [False]:
                marks = []
                if case["id"] in KNOWN_DIFFERENCES:
                    marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_DIFFERENCES[case["id"]]))
                runs.append(
                    pytest.param(case, release, mode, id=f"{case['id']}@{release}-lists={mode}", marks=marks)
                )
    return runs


def _device(case: dict[str, Any]) -> dict[str, Any]:
    dev = case["device"]
    return {
        "name": "dev",
        "allowMultipleAllocations": dev["allowMultipleAllocations"],
        "attributes": {n: {a["type"]: a["value"]} for n, a in dev["attributes"].items()},
        "capacity": {n: {"value": q} for n, q in dev["capacity"].items()},
    }


@needs_file
@pytest.mark.parametrize(("case", "release", "lists"), _runs())
def test_device_selector_case(case: dict[str, Any], release: str, lists: bool) -> None:
    # GIVEN the gates the Go test pins, where the release has them
    features = {"DRAListTypeAttributes": lists} if release == "1.36" else {}
    if release == "1.36" and case["features"].get("DRAConsumableCapacity") is not None:
        features["DRAConsumableCapacity"] = case["features"]["DRAConsumableCapacity"]
    if release != "1.36" and case["features"].get("DRAConsumableCapacity"):
        features["DRAConsumableCapacity"] = True
    expect = case["expect"]
    new = case["env_type"] == "NewExpressions"
    # WHEN compiling and evaluating
    if expect.get("error", {}).get("phase") == "compile":
        with pytest.raises(CelCompileError) as err:
            DeviceSelector(case["expression"], kubernetes=release, new_expression=new, features=features)
        assert expect["error"]["contains"] is None or expect["error"]["contains"] in str(err.value)
        return
    selector = DeviceSelector(case["expression"], kubernetes=release, new_expression=new, features=features)
    if case.get("expected_max_cost") is not None:
        assert selector.cost == case["expected_max_cost"]
    # THEN the verdict or runtime error is the Go test's
    if "error" in expect:
        with pytest.raises(CelEvaluationError) as err:
            selector.matches(case["device"]["driver"], _device(case))
        assert expect["error"]["contains"] in str(err.value)
    else:
        assert selector.matches(case["device"]["driver"], _device(case)) is expect["result"]


@needs_file
@pytest.mark.parametrize("case", DATA.get("validation_cases", []), ids=lambda c: c["id"])
def test_api_server_validation_case(case: dict[str, Any]) -> None:
    expect = case["expect"]
    if expect["valid"]:
        DeviceSelector(case["expression"], kubernetes="1.36", new_expression=True)
        return
    with pytest.raises(CelCompileError) as err:
        DeviceSelector(case["expression"], kubernetes="1.36", new_expression=True)
    if "contains" in expect:
        assert expect["contains"] in str(err.value)
    if expect["error_type"] == "FieldValueTooLong":
        assert "too long" in str(err.value)


@needs_file
@pytest.mark.parametrize("case", DATA.get("library_cases", []), ids=lambda c: c["id"])
def test_semver_library_case(case: dict[str, Any]) -> None:
    expect = case["expect"]
    if expect.get("error", {}).get("phase") == "compile":
        with pytest.raises(CelCompileError, match=expect["error"]["regex"]):
            DeviceSelector(case["expression"])
        return
    if "error" in expect:
        with pytest.raises(EvalError, match=expect["error"]["regex"]):
            evaluate(parse(case["expression"]), {}, 1_000_000)
        return
    value = evaluate(parse(case["expression"]), {}, 1_000_000)
    assert (
        str(value) == str(expect["value"]["value"])
        if expect["value"]["type"] == "semver"
        else value == expect["value"]["value"]
    )
    assert not isinstance(value, CelError)
