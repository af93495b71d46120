"""The devices' summary by kind: Python's (offline) equals jq's (the gate Job's), on any slices."""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

import jq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuplatform.errors import InputError
from gpuplatform.evidence.summary import summarise
from gpuplatform.gates.programs import PROGRAMS, prelude_for

_SUMMARISED = prelude_for("summarised") + "summarised"

_TEXT = st.sampled_from(["gpu", "mig", "NVIDIA H100 80GB HBM3", "1g.10gb", "81559Mi", "GPU-a", "MIG-b", ""])
_ENTRY = st.one_of(st.none(), st.builds(lambda v: {"string": v}, _TEXT), st.just({"int": 3}), st.just({}))
_READ = ["type", "productName", "profile", "uuid", "architecture"]
_ATTRIBUTES = st.one_of(st.none(), st.dictionaries(st.sampled_from(_READ), _ENTRY, max_size=5))
_QUANTITY = st.one_of(st.none(), st.builds(lambda v: {"value": v}, _TEXT), st.just({}))
_CAPACITY = st.one_of(st.none(), st.dictionaries(st.sampled_from(["memory", "cores"]), _QUANTITY, max_size=2))
_NAME = st.one_of(st.none(), st.sampled_from(["gpu-0", "gpu-1", "gpu-0-mig-1"]))
#: any shape the API serves (and null where a field may be absent)
_ODD_DEVICE = st.fixed_dictionaries(
    {}, optional={"name": _NAME, "attributes": _ATTRIBUTES, "capacity": _CAPACITY}
)
#: devices as the driver publishes them: every field read present
_DEVICE = st.builds(
    lambda name, kind, product, profile, memory, uuid: {
        "name": name,
        "attributes": {
            "type": {"string": kind},
            "productName": {"string": product},
            "profile": {"string": profile},
            "uuid": {"string": uuid},
            "architecture": {"string": "Hopper"},
        },
        "capacity": {"memory": {"value": memory}},
    },
    st.sampled_from(["gpu-0", "gpu-1", "gpu-2"]),
    st.sampled_from(["gpu", "mig"]),
    st.sampled_from(["NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-40GB"]),
    st.sampled_from(["1g.10gb", "3g.40gb"]),
    st.sampled_from(["81559Mi", "9728Mi"]),
    st.sampled_from(["GPU-a", "GPU-b", "MIG-c"]),
)
_SLICE = st.one_of(
    st.builds(
        lambda devices, generation: {
            "metadata": {"name": "s"},
            "spec": {
                "driver": "gpu.nvidia.com",
                "nodeName": "n",
                "pool": {"name": "n", "generation": generation},
                "devices": devices,
            },
        },
        st.lists(st.one_of(_DEVICE, _ODD_DEVICE), max_size=10),
        st.integers(0, 2),
    ),
    st.sampled_from(
        [{}, {"spec": {}}, {"spec": {"devices": None}}, {"spec": {"devices": {}}}, {"spec": "x"}]
    ),
)


def _jq_binary(slices: list[dict[str, Any]]) -> Any:
    done = subprocess.run(
        ["jq", "-c", _SUMMARISED], input=json.dumps(slices), capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


@settings(max_examples=400, deadline=None)
@given(st.lists(_SLICE, max_size=4))
def test_python_summary_is_the_jq_summary(slices: list[dict[str, Any]]) -> None:
    assert summarise(slices, "resourceslices.json") == jq.compile(_SUMMARISED).input_value(slices).first()


@pytest.mark.skipif(shutil.which("jq") is None, reason="the gate Job's jq executable is not installed")
@settings(max_examples=60, deadline=None)
@given(st.lists(_SLICE, max_size=4))
def test_python_summary_is_the_gate_jobs_jq_summary(slices: list[dict[str, Any]]) -> None:
    assert summarise(slices, "resourceslices.json") == _jq_binary(slices)


def test_summary_keeps_kinds_in_first_appearance_order_with_each_devices_name_and_uuid() -> None:
    def device(name: str, memory: str) -> dict[str, Any]:
        return {
            "name": name,
            "attributes": {"type": {"string": "gpu"}, "uuid": {"string": f"GPU-{name}"}},
            "capacity": {"memory": {"value": memory}},
        }

    slices = [{"spec": {"devices": [device("a", "80Gi"), device("b", "40Gi"), device("c", "80Gi")]}}]
    kinds = summarise(slices, "f")[0]["spec"]["kinds"]
    assert [(k["memory"], k["names"], k["uuids"]) for k in kinds] == [
        ("80Gi", ["a", "c"], ["GPU-a", "GPU-c"]),
        ("40Gi", ["b"], ["GPU-b"]),
    ]
    assert "devices" not in summarise(slices, "f")[0]["spec"]


@pytest.mark.parametrize(
    ("device", "field"),
    [
        ("gpu-0", "items[0].spec.devices[1]"),
        ({"name": 7}, "items[0].spec.devices[1].name"),
        ({"attributes": "x"}, "items[0].spec.devices[1].attributes"),
        ({"attributes": {"type": "gpu"}}, "items[0].spec.devices[1].attributes.type"),
        (
            {"attributes": {"productName": {"string": 5}}},
            "items[0].spec.devices[1].attributes.productName.string",
        ),
        ({"attributes": {"uuid": {"string": ["GPU-a"]}}}, "items[0].spec.devices[1].attributes.uuid.string"),
        ({"capacity": {"memory": {"value": 80}}}, "items[0].spec.devices[1].capacity.memory.value"),
        ({"capacity": []}, "items[0].spec.devices[1].capacity"),
    ],
)
def test_a_device_the_api_would_never_serve_is_refused_naming_its_field(device: Any, field: str) -> None:
    slices = [{"spec": {"devices": [{"name": "gpu-1"}, device]}}]
    with pytest.raises(InputError) as caught:
        summarise(slices, "snap/resourceslices.json")
    (problem,) = caught.value.problems
    assert (problem.file, problem.loc) == ("snap/resourceslices.json", field)


def test_the_programs_read_devices_only_through_the_summary() -> None:
    text = "".join(PROGRAMS.values()) + prelude_for("".join(PROGRAMS.values()))
    assert ".spec.devices" not in text and "summarised" not in text
    assert ".spec.kinds" in text


_SELECTION = st.fixed_dictionaries(
    {},
    optional={
        "nodeName": st.sampled_from(["n-1", "n-2"]),
        "nodeSelector": st.sampled_from(
            [
                {
                    "nodeSelectorTerms": [
                        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n-1"]}]}
                    ]
                }
            ]
        ),
        "allNodes": st.booleans(),
    },
)
_PARTITIONED = st.builds(
    lambda devices, per_device: {
        "spec": {"driver": "gpu.nvidia.com", "perDeviceNodeSelection": per_device, "devices": devices}
    },
    st.lists(st.builds(lambda d, s: d | s, _DEVICE, _SELECTION), max_size=6),
    st.sampled_from([True, False, None, "true"]),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_PARTITIONED, max_size=3))
def test_the_summary_keeps_each_devices_node_selection_alike(slices: list[dict[str, Any]]) -> None:
    # GIVEN slices whose devices carry their own nodeName, nodeSelector or allNodes
    # WHEN Python and jq sum them up / THEN alike, with the distinct selections in first-appearance order
    assert summarise(slices, "resourceslices.json") == jq.compile(_SUMMARISED).input_value(slices).first()
    if shutil.which("jq") is not None:
        assert summarise(slices, "resourceslices.json") == _jq_binary(slices)


def test_a_partitioned_slice_keeps_the_distinct_node_selections_of_its_devices() -> None:
    devices = [
        {"name": "a", "nodeName": "n-1"},
        {"name": "b", "allNodes": True},
        {"name": "c", "nodeName": "n-1"},
    ]
    (summary,) = summarise([{"spec": {"perDeviceNodeSelection": True, "devices": devices}}], "f")
    assert summary["spec"]["deviceNodes"] == [{"nodeName": "n-1"}, {"allNodes": True}]
    (plain,) = summarise([{"spec": {"nodeName": "n-1", "devices": devices}}], "f")
    assert "deviceNodes" not in plain["spec"]
