"""render/nim_selectors.py: the NIM Operator's exact CEL for attribute and capacity selectors."""

from __future__ import annotations

from gpuplatform.model.workloads import NimService
from gpuplatform.render.nim_selectors import nim_expressions


def test_selectors_become_the_operators_cel_in_order() -> None:
    nim = NimService.model_validate(
        {
            "name": "llm",
            "namespace": "team-a",
            "movesIn": "w",
            "attributeSelectors": [
                {"key": "architecture", "value": "Ampere"},
                {"key": "example.com/healthy", "op": "NotEqual", "value": False},
                {
                    "key": "cudaComputeCapability",
                    "op": "GreaterThan",
                    "value": "8.0.0",
                    "valueType": "version",
                },
                {"key": "count", "op": "LessThanOrEqual", "value": 4},
            ],
            "capacitySelectors": [{"key": "memory", "op": "GreaterThanOrEqual", "value": "40Gi"}],
        }
    )
    expressions, refused = nim_expressions(nim, "spec.nimServices[0]")
    assert expressions == [
        (
            "spec.nimServices[0].attributeSelectors[0]",
            'device.attributes["gpu.nvidia.com"].architecture == "Ampere"',
        ),
        ("spec.nimServices[0].attributeSelectors[1]", 'device.attributes["example.com"].healthy != false'),
        (
            "spec.nimServices[0].attributeSelectors[2]",
            '(device.attributes["gpu.nvidia.com"].cudaComputeCapability).compareTo(semver("8.0.0")) > 0',
        ),
        ("spec.nimServices[0].attributeSelectors[3]", 'device.attributes["gpu.nvidia.com"].count <= 4'),
        (
            "spec.nimServices[0].capacitySelectors[0]",
            '(device.capacity["gpu.nvidia.com"].memory).compareTo(quantity("40Gi")) >= 0',
        ),
    ]
    assert refused == []


def test_ordering_operators_on_strings_and_bools_are_refused() -> None:
    nim = NimService.model_validate(
        {
            "name": "llm",
            "namespace": "team-a",
            "movesIn": "w",
            "attributeSelectors": [
                {"key": "productName", "op": "LessThan", "value": "x"},
                {"key": "ok", "op": "GreaterThan", "value": True},
            ],
        }
    )
    expressions, refused = nim_expressions(nim, "n")
    assert expressions == []
    assert [loc for loc, _ in refused] == ["n.attributeSelectors[0]", "n.attributeSelectors[1]"]
