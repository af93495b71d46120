"""Catalog memory is what the driver publishes (NVML's total), with a known variance per entry."""

from __future__ import annotations

import pytest

from gpuplatform.cel.quantity import parse_quantity
from gpuplatform.inventory.catalog import lookup_product, slices_for_node
from gpuplatform.inventory.catalog_data import MIG_PROFILES, PRODUCTS
from gpuplatform.inventory.memory import memory_range


@pytest.mark.parametrize("product", PRODUCTS, ids=lambda p: p.key)
def test_every_product_has_a_sourced_figure_and_a_variance(product) -> None:  # type: ignore[no-untyped-def]
    assert product.memory_source and 0 <= product.variance < 0.05
    assert parse_quantity(product.memory).value > 0


def test_an_h100_publishes_81559mi_and_80gi_is_outside_the_variance() -> None:
    h100 = lookup_product("H100-80GB")
    assert h100.memory == "81559Mi"
    window = memory_range(h100.memory, h100.variance)
    assert window.contains("81559Mi") and window.contains(str(85520809984))
    assert not window.contains("80Gi") and not window.contains("garbage")
    [gpu, *_] = slices_for_node("n", "H100-80GB", 8)[0]["spec"]["devices"]
    assert gpu["capacity"]["memory"]["value"] == "81559Mi"


def test_an_equal_figure_is_never_outside_even_without_variance() -> None:
    grid = lookup_product("GRID-A100-10C")
    assert grid.variance == 0 and memory_range(grid.memory, 0).contains("10240Mi")


def test_mig_profiles_carry_a_variance() -> None:
    assert all(p.variance > 0 for profiles in MIG_PROFILES.values() for p in profiles)
