"""`check --inventory` exits 1 when a tier, claim template or NIM selector matches no inventory device."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from gpuplatform.cli import main
from gpuplatform.inventory.catalog import slices_for_node
from tests.specs import minimal_spec, write_spec


def _spec(tmp_path: Path, min_memory: str) -> Path:
    doc = minimal_spec()
    doc["spec"]["tiers"] = [{"name": "full", "architecture": "Hopper", "minMemory": min_memory}]
    doc["spec"]["nodePools"][0]["product"] = "H100-80GB"
    return write_spec(tmp_path / "lab.yaml", doc)


def _inventory(tmp_path: Path, product: str) -> Path:
    path = tmp_path / f"{product}.json"
    items = slices_for_node("gpu-02", product, 8) + slices_for_node("gpu-01", product, 8)
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


def test_a_tier_asking_for_the_marketing_figure_matches_no_h100(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["check", str(_spec(tmp_path, "80Gi")), "--inventory", str(_inventory(tmp_path, "H100-80GB"))]
    )
    assert result.exit_code == 1
    assert "GP311 tier 'full' matches no device in the modelled pools or the inventory" in result.stderr
    assert "GP311 claimTemplate 'team-a/one-gpu'" in result.stderr


def test_what_the_driver_publishes_is_matched(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["check", str(_spec(tmp_path, "79Gi")), "--inventory", str(_inventory(tmp_path, "H100-80GB"))]
    )
    assert result.exit_code == 0, result.stderr


def test_matching_the_model_but_not_the_inventory_is_an_error(tmp_path: Path) -> None:
    # GIVEN a spec of Hopper pools and an inventory of a cluster that publishes only L40S devices
    result = CliRunner().invoke(
        main, ["check", str(_spec(tmp_path, "79Gi")), "--inventory", str(_inventory(tmp_path, "L40S"))]
    )
    # THEN the tier, modelled fine, is refused against what the cluster really publishes
    assert result.exit_code == 1
    assert (
        "GP311 tier 'full' matches no device of the inventory (it matches 12 modelled device(s))"
        in result.stderr
    )
