"""Unit tests of Kubernetes CEL semantics beyond the upstream table."""

from __future__ import annotations

import re

import pytest

from gpuplatform.cel import CelCompileError, CelEvaluationError, DeviceSelector
from gpuplatform.cel.quantity import QuantityError, parse_quantity
from gpuplatform.cel.semver import SemverError, parse_semver

DRIVER = "gpu.nvidia.com"
DEVICE = {
    "name": "gpu-0",
    "attributes": {
        "productName": {"string": "NVIDIA A100-SXM4-80GB"},
        "cudaComputeCapability": {"version": "8.0.0"},
        "count": {"int": 3},
    },
    "capacity": {"memory": {"value": "80Gi"}},
}


def run(expression: str, **kwargs: object) -> bool:
    return DeviceSelector(expression, **kwargs).matches(DRIVER, DEVICE)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "expression",
    [
        'quantity("1Gi") == quantity("1024Mi")',
        'quantity("1.5Gi").isGreaterThan(quantity("1536Mi")) == false',
        'quantity("100m").add(quantity("900m")) == quantity("1")',
        'quantity("2k").sub(1).asInteger() == 1999',
        'quantity("-1").sign() == -1 && !quantity("1.5").isInteger()',
        'quantity("1Ki").compareTo(quantity("1000")) == 1',
        'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) == 0',
        'semver("1.2.3-rc.1").isLessThan(semver("1.2.3"))',
        'semver("v1.2", true) == semver("1.2.0") && semver("2.3.4").minor() == 3',
        'device.attributes["gpu.nvidia.com"].cudaComputeCapability.isGreaterThan(semver("7.5.0"))',
        'device.attributes["gpu.nvidia.com"].productName.lowerAscii().matches("a100")',
        '"a,b,c".split(",").join("-") == "a-b-c" && "  x ".trim() == "x"',
        '"hello".substring(1, 3) == "el" && "hello".indexOf("l") == 2 && "hello".lastIndexOf("l") == 3',
        "[3, 1, 2].max() == 3 && [1, 2].sum() == 3 && [1, 2, 2].isSorted() && [1, 2, 2].lastIndexOf(2) == 2",
        '"abc123".find("[0-9]+") == "123" && "a1b2".findAll("[0-9]").size() == 2',
        'cel.bind(a, device.attributes["gpu.nvidia.com"], a.count == 3)',
        "[1, 2, 3].filter(x, x > 1).map(x, x * 2) == [4, 6] && [1, 2].exists_one(x, x == 2)",
        'sets.contains([1, 2, 3], [2]) && strings.quote("a\\"b") == "\\"a\\\\\\"b\\""',
    ],
)
def test_library_functions_hold(expression: str) -> None:
    assert run(expression) is True


def test_missing_attribute_errors_but_unknown_domain_is_empty() -> None:
    assert run('"x" in device.attributes["no.such.domain"]') is False
    with pytest.raises(CelEvaluationError, match="no such key: profile"):
        run('device.attributes["gpu.nvidia.com"].profile == "1g.5gb"')


def test_and_or_absorb_errors_when_the_other_side_decides() -> None:
    missing = 'device.attributes["gpu.nvidia.com"].profile == "x"'
    assert run(f"false && {missing}") is False and run(f"{missing} && false") is False
    assert run(f"{missing} || true") is True
    with pytest.raises(CelEvaluationError):
        run(f"true && {missing}")


def test_non_bool_results_fail_at_compile_or_run_time() -> None:
    with pytest.raises(CelCompileError, match="not string"):
        DeviceSelector('"x"')
    with pytest.raises(CelEvaluationError, match=r"type kubernetes\.Semver could not be converted"):
        run('device.attributes["gpu.nvidia.com"].cudaComputeCapability')


def test_a_syntax_error_names_its_position_and_shows_the_source_under_a_caret() -> None:
    # as the API server's message does: ERROR: <input>:line:column, the line, a caret under the column
    with pytest.raises(CelCompileError) as raised:
        DeviceSelector("device.driver ==\n  ] 'gpu.nvidia.com'")
    assert str(raised.value).splitlines() == [
        "compilation failed: ERROR: <input>:2:3: Syntax error near ']'",
        " |   ] 'gpu.nvidia.com'",
        " | ..^",
    ]


def test_length_and_cost_limits() -> None:
    with pytest.raises(CelCompileError, match="too long"):
        DeviceSelector("true || " * 1300 + "true")
    nested = "[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, " * 3 + "true" + "))" * 3
    with pytest.raises(CelCompileError, match="exceeds cost limit"):
        DeviceSelector(nested)
    assert DeviceSelector(nested, new_expression=False).cost > 1_000_000


def test_version_gating_of_new_expressions() -> None:
    includes = 'device.attributes["gpu.nvidia.com"].productName.includes("x")'
    with pytest.raises(CelCompileError, match="undeclared reference to 'includes'"):
        DeviceSelector(includes, kubernetes="1.36")
    DeviceSelector(includes, kubernetes="1.36", features={"DRAListTypeAttributes": True})
    with pytest.raises(CelCompileError, match="undefined field 'allowMultipleAllocations'"):
        DeviceSelector("device.allowMultipleAllocations", kubernetes="1.35")
    DeviceSelector("device.allowMultipleAllocations", kubernetes="1.36")
    DeviceSelector("device.allowMultipleAllocations", kubernetes="1.35", new_expression=False)


def test_reads_and_memoised_matching_agree_with_naive() -> None:
    # GIVEN devices differing only in what the selector does not read
    selector = DeviceSelector('device.capacity["gpu.nvidia.com"].memory.isGreaterThan(quantity("40Gi"))')
    devices = [
        {**DEVICE, "name": f"g{i}", "capacity": {"memory": {"value": f"{i * 10}Gi"}}} for i in range(8)
    ]
    # THEN the read set is exact and the memo gives the naive answers
    assert selector.reads == frozenset({("capacity", "gpu.nvidia.com", "memory")})
    assert selector.match_many(DRIVER, devices) == [selector.matches(DRIVER, d) for d in devices]
    assert selector.count_matches(DRIVER, devices) == 3


def test_prepared_device_set_agrees_with_device_by_device_evaluation() -> None:
    # GIVEN devices of two owners, one with a list attribute and one with a bad version string
    from gpuplatform.cel import DeviceSet

    selector = DeviceSelector(
        'device.attributes["gpu.nvidia.com"].count > 2', features={"DRAListTypeAttributes": False}
    )
    odd = {**DEVICE, "name": "odd", "attributes": {**DEVICE["attributes"], "tags": {"strings": ["a"]}}}
    bad = {**DEVICE, "name": "bad", "attributes": {**DEVICE["attributes"], "v": {"version": "x.y"}}}
    low = {**DEVICE, "name": "low", "attributes": {**DEVICE["attributes"], "count": {"int": 1}}}
    devices = DeviceSet(DRIVER, selector.reads)
    devices.add("node-a", [DEVICE, low, DEVICE])
    devices.add("node-b", [odd, bad, DEVICE])
    devices.add_like("node-c", "node-a")
    # WHEN verdicts are computed per distinct row
    outcomes = selector.row_verdicts(devices)
    # THEN healthy rows match like a single evaluation; rows of devices the scheduler cannot read raise
    naive = {}
    for device in (DEVICE, low, odd, bad):
        try:
            naive[device["name"]] = selector.matches(DRIVER, device)
        except CelEvaluationError as exc:
            naive[device["name"]] = str(exc)
    assert naive["gpu-0"] is True and naive["low"] is False
    assert "unsupported attribute value" in naive["odd"] and "semantic version" in naive["bad"]
    by_row = {
        rep["name"]: str(o) if isinstance(o, CelEvaluationError) else o
        for rep, o in zip(devices.representatives, outcomes, strict=True)
    }
    assert by_row == naive
    assert devices.counts([o is True for o in outcomes]) == {"node-a": 2, "node-b": 1, "node-c": 2}
    assert len(devices) == 9


NON_BOOL = [
    ("1", "int"),
    ("'gpu'", "string"),
    ("device.driver", "string"),
    ("device.attributes['gpu.nvidia.com'].count + 1", "int"),
    ("device.attributes['gpu.nvidia.com'].productName.lowerAscii()", "string"),
    ("device.capacity['gpu.nvidia.com'].memory", "kubernetes.Quantity"),
    ("quantity('1Gi')", "kubernetes.Quantity"),
    ("semver('1.0.0').major()", "int"),
    ("device.attributes['gpu.nvidia.com'].cudaComputeCapability.compareTo(semver('8.0.0'))", "int"),
    ("[device.attributes['gpu.nvidia.com'].count]", "list(any)"),
    ("device.attributes['gpu.nvidia.com']", "map(string, any)"),
    ("cel.bind(x, 1, x)", "int"),
    ("dyn(true)", "dyn"),
]


@pytest.mark.parametrize("release", ["1.34", "1.35", "1.36"])
@pytest.mark.parametrize("new_expression", [True, False])
@pytest.mark.parametrize(("expression", "type_"), NON_BOOL)
def test_a_result_that_is_not_bool_is_a_compile_error(
    expression: str, type_: str, release: str, new_expression: bool
) -> None:
    # k8s.io/dynamic-resource-allocation cel/compile.go (kubernetes-1.36.0) CompileCELExpression:
    # only bool, the unknown type (any) and, with DRAListTypeAttributes, dyn are accepted.
    message = re.escape(f"must evaluate to bool or the unknown type, not {type_}")
    with pytest.raises(CelCompileError, match=message):
        DeviceSelector(expression, kubernetes=release, new_expression=new_expression)


def test_dyn_results_compile_with_list_attributes_and_fail_only_when_not_bool() -> None:
    selector = DeviceSelector(
        "dyn(device.attributes['gpu.nvidia.com'].count)", features={"DRAListTypeAttributes": True}
    )
    with pytest.raises(CelEvaluationError, match="CEL result of type int could not be converted to bool"):
        selector.matches(DRIVER, DEVICE)
    attribute = DeviceSelector("device.attributes['gpu.nvidia.com'].productName")
    with pytest.raises(CelEvaluationError, match="could not be converted to bool"):
        attribute.matches(DRIVER, DEVICE)


@pytest.mark.parametrize("release", ["1.34", "1.35", "1.36"])
def test_allow_multiple_allocations_in_stored_expressions_with_consumable_capacity(release: str) -> None:
    # compile_test.go case allow_multiple_allocations: StoredExpressions, DRAConsumableCapacity on.
    features = {"DRAConsumableCapacity": True}
    yes = DeviceSelector(
        "device.allowMultipleAllocations == true", kubernetes=release, new_expression=False, features=features
    )
    no = DeviceSelector(
        "device.allowMultipleAllocations == false",
        kubernetes=release,
        new_expression=False,
        features=features,
    )
    assert yes.cost == no.cost == 3
    assert yes.reads == frozenset({("allowMultipleAllocations",)})
    shared = {**DEVICE, "allowMultipleAllocations": True}
    assert yes.matches(DRIVER, shared) and not no.matches(DRIVER, shared)
    assert no.matches(DRIVER, DEVICE) and no.matches(DRIVER, {**DEVICE, "allowMultipleAllocations": False})
    assert yes.count_matches(DRIVER, [shared, DEVICE, shared]) == 2
    # Stored expressions ignore the gate (environment.go filterAndBuildOpts); new ones honour it.
    DeviceSelector("device.allowMultipleAllocations", kubernetes=release, new_expression=False)
    with pytest.raises(CelCompileError, match="undefined field 'allowMultipleAllocations'"):
        DeviceSelector(
            "device.allowMultipleAllocations", kubernetes=release, features={"DRAConsumableCapacity": False}
        )


@pytest.mark.parametrize("text", ["1Gi\n", "1\n", "1e3\n", "\n1Gi", "1Gi ", "١Gi", "1.٥"])
def test_quantity_text_is_matched_whole_in_ascii_digits(text: str) -> None:
    """apimachinery's parseQuantityString reads '0'-'9' bytes; "Gi\\n" is an unknown suffix."""
    with pytest.raises(QuantityError):
        parse_quantity(text)
    assert parse_quantity(text.strip().replace("١", "1").replace("٥", "5")) is not None


@pytest.mark.parametrize(
    "text", ["1.2.3\n", "1.2.3-rc.1\n", "1.2.3+build\n", "1.2.3-01\n", "1.2.٣", "1.2.3-rc\n.1"]
)
def test_semver_text_is_matched_whole_in_ascii(text: str) -> None:
    """blang/semver v4 checks each part with containsOnly(numbers|alphanum), byte by byte."""
    with pytest.raises(SemverError):
        parse_semver(text)


def test_tolerant_semver_trims_space_as_blang_parse_tolerant_does() -> None:
    assert (
        parse_semver("1.2.3\n", tolerant=True)
        == parse_semver(" v1.2.3", tolerant=True)
        == parse_semver("1.2.3")
    )


def test_a_quantity_or_version_with_a_trailing_newline_is_refused_in_an_expression() -> None:
    with pytest.raises(CelEvaluationError):
        run('quantity("1Gi\\n") == quantity("1Gi")')
    with pytest.raises(CelEvaluationError):
        run('semver("1.2.3-rc\\n").major() == 1')
    assert run('quantity("1Gi") == quantity("1024Mi") && semver("1.2.3-rc").major() == 1')
