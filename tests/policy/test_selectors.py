"""Selector checks of `gpuplatform check`: GP301, GP310-GP314 and the device counts per tier."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from gpuplatform.commands.check import CheckReport, check_platform
from gpuplatform.errors import Problem
from gpuplatform.inventory.resource_slices import read_resource_slices
from gpuplatform.load.stacks import load_stack
from tests.specs import minimal_spec, write_spec


def _check(tmp_path: Path, doc: dict[str, Any], inventory: Path | None = None) -> CheckReport:
    (loaded,) = load_stack(write_spec(tmp_path / "lab.yaml", doc))
    pools = read_resource_slices(inventory) if inventory is not None else None
    return check_platform(loaded, pools)


def _selector_problems(report: CheckReport, code: str) -> list[Problem]:
    return [p for p in report.problems if p.code == code]


def _cel_tier(cel: str) -> dict[str, Any]:
    doc = minimal_spec()
    doc["spec"]["tiers"][0]["cel"] = cel
    return doc


def test_counts_per_modelled_pool_and_best_node(tmp_path: Path) -> None:
    # GIVEN an A100 pool of 4 GPUs per node and an H100 pool of 8
    report = _check(tmp_path, _cel_tier("device.attributes['gpu.nvidia.com'].architecture == 'Hopper'"))
    # THEN the tier matches only the H100s, and the claim template sees the same devices
    tier = next(r for r in report.rows if r.target.kind == "tier")
    assert (tier.per_pool, tier.modelled, tier.best_node) == ({"old": 0, "new": 8}, 8, 8)
    template = next(r for r in report.rows if r.target.kind == "claimTemplate")
    assert template.target.name == "team-a/one-gpu" and template.modelled == 8
    assert not report.errors


def test_gp310_selector_that_does_not_compile_is_located_at_the_cel_field(tmp_path: Path) -> None:
    report = _check(tmp_path, _cel_tier("device.attributes['gpu.nvidia.com'].architecture =="))
    assert {p.loc for p in _selector_problems(report, "GP310")} == {"spec.tiers[0].cel"}


def test_gp311_selector_that_matches_nothing(tmp_path: Path) -> None:
    report = _check(tmp_path, _cel_tier("device.attributes['gpu.nvidia.com'].architecture == 'Blackwell'"))
    assert [p.loc for p in _selector_problems(report, "GP311")] == [
        "spec.tiers[0]",
        "spec.tenants[0].claimTemplates[0]",
    ]


def test_gp312_claim_template_larger_than_any_node(tmp_path: Path) -> None:
    doc = minimal_spec()
    doc["spec"]["tenants"][0]["claimTemplates"][0]["count"] = 9
    found = _selector_problems(_check(tmp_path, doc), "GP312")
    assert [p.loc for p in found] == ["spec.tenants[0].claimTemplates[0].count"]
    assert "no single node has more than 8" in found[0].message


def test_gp312_template_that_fits_one_node_passes(tmp_path: Path) -> None:
    doc = minimal_spec()
    doc["spec"]["tenants"][0]["claimTemplates"][0]["count"] = 8
    assert not _selector_problems(_check(tmp_path, doc), "GP312")


def test_gp313_attribute_the_driver_release_does_not_publish(tmp_path: Path) -> None:
    report = _check(tmp_path, _cel_tier("device.attributes['gpu.nvidia.com'].index == 0"))
    found = _selector_problems(report, "GP313")
    assert {p.loc for p in found} == {"spec.tiers[0].cel"}
    assert "'index'" in found[0].message and "productName" in found[0].hint


def test_gp313_published_attributes_pass(tmp_path: Path) -> None:
    report = _check(
        tmp_path, _cel_tier("device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA')")
    )
    assert not _selector_problems(report, "GP313")


def _inventory(tmp_path: Path) -> Path:
    """Two devices on one node; only the first publishes `addressingMode`."""

    def device(name: str, **extra: dict[str, str]) -> dict[str, Any]:
        return {
            "name": name,
            "attributes": {"architecture": {"string": "Hopper"}, "type": {"string": "gpu"}, **extra},
            "capacity": {"memory": {"value": "80Gi"}},
        }

    doc = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "gpu-09-gpu.nvidia.com"},
        "spec": {
            "driver": "gpu.nvidia.com",
            "nodeName": "gpu-09",
            "pool": {"name": "gpu-09", "generation": 1, "resourceSliceCount": 1},
            "devices": [device("gpu-0", addressingMode={"string": "None"}), device("gpu-1")],
        },
    }
    path = tmp_path / "slices.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_gp314_attribute_read_that_raises_on_some_inventory_devices(tmp_path: Path) -> None:
    # GIVEN a selector reading addressingMode without a guard, and a device that lacks it
    doc = _cel_tier("device.attributes['gpu.nvidia.com'].addressingMode == 'None'")
    # WHEN it is checked against the inventory
    report = _check(tmp_path, doc, _inventory(tmp_path))
    # THEN the read is reported with the `in` guard to add, and the inventory count is the one match
    found = _selector_problems(report, "GP314")
    assert found and found[0].loc == "spec.tiers[0].cel"
    assert "'addressingMode' in device.attributes['gpu.nvidia.com']" in found[0].hint
    tier = next(r for r in report.rows if r.target.kind == "tier")
    assert tier.inventory == 1


def test_gp314_guarded_read_passes(tmp_path: Path) -> None:
    doc = _cel_tier(
        "'addressingMode' in device.attributes['gpu.nvidia.com'] && "
        "device.attributes['gpu.nvidia.com'].addressingMode == 'None'"
    )
    report = _check(tmp_path, doc, _inventory(tmp_path))
    assert not _selector_problems(report, "GP314")


def test_gp301_pool_the_catalog_cannot_model(tmp_path: Path) -> None:
    doc = minimal_spec()
    doc["spec"]["nodePools"][0]["product"] = "Z9000"
    found = _selector_problems(_check(tmp_path, doc), "GP301")
    assert [p.loc for p in found] == ["spec.nodePools[0].product"]


def test_bridge_classes_are_checked_like_tiers(tmp_path: Path) -> None:
    doc = minimal_spec()
    doc["spec"]["bridges"] = [{"name": "legacy", "tier": "full"}]
    report = _check(tmp_path, doc)
    bridge = next(r for r in report.rows if r.target.kind == "bridge")
    assert bridge.target.loc == "spec.bridges[0]" and bridge.modelled == 12


def _nim(**fields: Any) -> dict[str, Any]:
    doc = minimal_spec()
    doc["spec"]["nimServices"] = [{"name": "llm", "namespace": "team-a", "movesIn": "claims", **fields}]
    return doc


def test_nim_attribute_and_capacity_selectors_are_checked_as_the_operator_builds_them(tmp_path: Path) -> None:
    # GIVEN a NIM service asking for Hopper, driver >= 550 and >= 40Gi, as in the operator's samples
    doc = _nim(
        tier="full",
        attributeSelectors=[
            {"key": "architecture", "value": "Hopper"},
            {"key": "driverVersion", "op": "GreaterThanOrEqual", "value": "550.0.0", "valueType": "version"},
        ],
        capacitySelectors=[{"key": "memory", "op": "GreaterThanOrEqual", "value": "40Gi"}],
    )
    # WHEN it is checked
    report = _check(tmp_path, doc)
    # THEN only the H100 pool's devices match and nothing is reported
    nim = next(r for r in report.rows if r.target.kind == "nimService")
    assert (nim.target.name, nim.per_pool) == ("team-a/llm", {"old": 0, "new": 8})
    assert not [p for p in report.problems if p.loc.startswith("spec.nimServices")]


def test_nim_selector_with_an_operator_the_operator_refuses(tmp_path: Path) -> None:
    doc = _nim(attributeSelectors=[{"key": "productName", "op": "GreaterThan", "value": "NVIDIA"}])
    found = _selector_problems(_check(tmp_path, doc), "GP310")
    assert [p.loc for p in found] == ["spec.nimServices[0].attributeSelectors[0]"]


def test_nim_cel_expressions_on_a_tier_that_match_nothing(tmp_path: Path) -> None:
    doc = _nim(
        tier="full", celExpressions=["device.attributes['gpu.nvidia.com'].architecture == 'Blackwell'"]
    )
    found = _selector_problems(_check(tmp_path, doc), "GP311")
    assert "spec.nimServices[0]" in [p.loc for p in found]


def _big_pool(doc: dict[str, Any]) -> dict[str, Any]:
    doc["spec"]["nodePools"][1]["nodes"] = [f"gpu-1{i:02d}" for i in range(40)]
    return doc


def test_nodes_of_a_pool_are_counted_without_modelling_each(tmp_path: Path) -> None:
    # GIVEN an H100 pool of 40 nodes and a tier reading nothing node-specific
    doc = _big_pool(_cel_tier("device.attributes['gpu.nvidia.com'].architecture == 'Hopper'"))
    # THEN every node counts: 40 x 8 devices, 8 on the best node
    tier = next(r for r in _check(tmp_path, doc).rows if r.target.kind == "tier")
    assert (tier.per_pool["new"], tier.best_node) == (320, 8)


def test_a_selector_reading_node_specific_values_models_every_node(tmp_path: Path) -> None:
    # GIVEN a tier that only the GPUs whose uuid ends in one hex digit match
    from gpuplatform.inventory import slices_for_node

    doc = _big_pool(_cel_tier("device.attributes['gpu.nvidia.com'].uuid.endsWith('a')"))
    nodes = doc["spec"]["nodePools"][1]["nodes"]
    expected = [
        sum(
            d["attributes"]["uuid"]["string"].endswith("a")
            for d in slices_for_node(n, "H100-80GB", 8)[0]["spec"]["devices"]
        )
        for n in nodes
    ]
    # WHEN it is checked
    tier = next(r for r in _check(tmp_path, doc).rows if r.target.kind == "tier")
    # THEN the counts are the per-node truth, not the first node's times forty
    assert tier.per_pool["new"] == sum(expected) and tier.best_node == max(expected)
    assert sum(expected) != expected[0] * len(nodes)


def test_a_tier_whose_cel_is_not_bool_does_not_compile(tmp_path: Path) -> None:
    # GIVEN a tier whose expression yields the product name, not a verdict
    report = _check(tmp_path, _cel_tier("device.attributes['gpu.nvidia.com'].productName.lowerAscii()"))
    # THEN it is GP310 at the cel field (a compile error), not a runtime error on every device
    found = _selector_problems(report, "GP310")
    assert {p.loc for p in found} == {"spec.tiers[0].cel"}
    assert all("must evaluate to bool or the unknown type, not string" in p.message for p in found)
    assert not _selector_problems(report, "GP314")
