"""Tenants and tiers: GP150-GP152, GP160, GP220."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpuplatform.policy.rules.tenants import pins_one_sku
from tests.policy.helpers import codes, findings
from tests.specs import minimal_spec


def test_gp150_claim_template_for_a_tier_the_tenant_may_not_use(tmp_path: Path) -> None:
    doc = minimal_spec()
    doc["spec"]["tiers"].append({"name": "big", "minMemory": "80Gi"})
    doc["spec"]["tenants"][0]["claimTemplates"].append({"name": "big-gpu", "tier": "big"})
    found = [p for p in findings(tmp_path, doc) if p.code == "GP150"]
    assert [p.loc for p in found] == ["spec.tenants[0].claimTemplates[1].tier"]


def test_gp150_allowed_tier_passes(tmp_path: Path) -> None:
    assert "GP150" not in codes(tmp_path, minimal_spec())


def _tier(**fields: Any) -> dict[str, Any]:
    doc = minimal_spec()
    doc["spec"]["tiers"][0].update(fields)
    return doc


def test_gp151_raw_cel_tier_owned_by_a_tenant(tmp_path: Path) -> None:
    doc = _tier(owner="team-a", cel="device.attributes['gpu.nvidia.com'].architecture == 'Hopper'")
    found = [p for p in findings(tmp_path, doc) if p.code == "GP151"]
    assert [p.loc for p in found] == ["spec.tiers[0].cel"]


def test_gp151_typed_tenant_tier_or_platform_cel_passes(tmp_path: Path) -> None:
    assert "GP151" not in codes(tmp_path, _tier(owner="team-a", architecture="Hopper"))
    assert "GP151" not in codes(
        tmp_path, _tier(cel="device.attributes['gpu.nvidia.com'].architecture == 'Hopper'")
    )


def test_gp152_production_tenant_on_a_sharing_tier(tmp_path: Path) -> None:
    doc = _tier(sharing="mps")
    doc["spec"]["tenants"][0]["environment"] = "production"
    found = [p for p in findings(tmp_path, doc) if p.code == "GP152"]
    assert [p.loc for p in found] == ["spec.tenants[0].tiers[0]"]


def test_gp152_development_tenant_on_a_sharing_tier_passes(tmp_path: Path) -> None:
    assert "GP152" not in codes(tmp_path, _tier(sharing="mps"))


def _nim(tenant_env: str = "development", **nim: Any) -> dict[str, Any]:
    doc = minimal_spec()
    doc["spec"]["tenants"][0]["environment"] = tenant_env
    doc["spec"]["nimServices"] = [
        {"name": "llm", "namespace": "team-a", "tier": "full", "movesIn": "claims", **nim}
    ]
    return doc


def test_gp160_nim_dra_in_a_production_namespace(tmp_path: Path) -> None:
    found = [p for p in findings(tmp_path, _nim("production")) if p.code == "GP160"]
    assert [p.loc for p in found] == ["spec.nimServices[0]"]


def test_gp160_nim_dra_in_a_production_wave(tmp_path: Path) -> None:
    doc = _nim()
    doc["spec"]["waves"][2]["production"] = True
    assert "GP160" in codes(tmp_path, doc)


def test_gp160_accepted_or_development_nim_passes(tmp_path: Path) -> None:
    assert "GP160" not in codes(tmp_path, _nim("production", acceptPreview=True))
    assert "GP160" not in codes(tmp_path, _nim())


def test_gp220_tier_pinning_one_product_is_a_warning(tmp_path: Path) -> None:
    found = [p for p in findings(tmp_path, _tier(productName="NVIDIA H100 80GB HBM3")) if p.code == "GP220"]
    assert [(p.loc, p.severity) for p in found] == [("spec.tiers[0].productName", "warning")]


@pytest.mark.parametrize(
    ("product_name", "cel", "pinned"),
    [
        ("^NVIDIA H100 80GB HBM3$", None, True),
        ("H100.*", None, False),
        ("H100|H200", None, False),
        (None, "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'", True),
        (None, "device.attributes['gpu.nvidia.com'].architecture == 'Hopper'", False),
        (None, None, False),
    ],
)
def test_pins_one_sku(product_name: str | None, cel: str | None, pinned: bool) -> None:
    assert pins_one_sku(product_name, cel) is pinned


def test_gp220_intent_tier_passes(tmp_path: Path) -> None:
    assert "GP220" not in codes(tmp_path, _tier(architecture="Hopper", minMemory="40Gi"))
