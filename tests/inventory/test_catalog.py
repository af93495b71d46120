"""Catalog: products by key and productName, per-release attributes, MIG naming, determinism."""

from __future__ import annotations

import pytest

from gpuplatform.cel import DeviceSelector
from gpuplatform.errors import InputError
from gpuplatform.inventory import lookup_product, published_attributes, slices_for_node
from gpuplatform.inventory.catalog import NODE_SPECIFIC_ATTRIBUTES


def test_lookup_by_key_and_product_name_agree() -> None:
    assert lookup_product("H100-80GB") is lookup_product("NVIDIA H100 80GB HBM3")
    with pytest.raises(InputError):
        lookup_product("NVIDIA T4000")


def test_release_attributes_change_as_the_driver_did() -> None:
    assert "index" in published_attributes("25.3.2") and "index" not in published_attributes("25.8.1")
    assert "pcieBusID" in published_attributes("25.8.1")
    assert "resource.kubernetes.io/pciBusID" in published_attributes("0.4.1")
    assert "profile" in published_attributes("0.4.1", "mig")


def test_slices_are_deterministic_and_named_like_the_driver() -> None:
    # GIVEN the same node twice
    first = slices_for_node("node-a", "A100-80GB", 2, mig_layout=["3g.40gb", "3g.40gb"])
    second = slices_for_node("node-a", "A100-80GB", 2, mig_layout=["3g.40gb", "3g.40gb"])
    # THEN identical output and v25.12+ MIG names
    assert first == second
    names = [d["name"] for d in first[0]["spec"]["devices"]]
    assert names[:2] == ["gpu-0-mig-3g40gb-9-0", "gpu-0-mig-3g40gb-9-4"]
    old = slices_for_node("node-a", "A100-80GB", 1, driver_release="25.8.1", mig_layout=["7g.80gb"])
    assert old[0]["spec"]["devices"][0]["name"] == "gpu-0-mig-0-0-8"


def test_catalog_devices_satisfy_the_chart_classes() -> None:
    gpu = DeviceSelector(
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"
    )
    big = DeviceSelector("device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity('40Gi'))")
    devices = slices_for_node("n", "H100-80GB", 8)[0]["spec"]["devices"]
    assert gpu.count_matches("gpu.nvidia.com", devices) == 8
    assert big.count_matches("gpu.nvidia.com", devices) == 8
    l4 = slices_for_node("n", "L4", 1)[0]["spec"]["devices"]
    assert not big.matches("gpu.nvidia.com", l4[0])


def test_unknown_mig_profile_is_an_input_error() -> None:
    with pytest.raises(InputError, match="no MIG profile"):
        slices_for_node("n", "H100-80GB", 1, mig_layout=["3g.20gb"])


@pytest.mark.parametrize(
    ("product", "layout", "release"),
    [("H100-80GB", None, "0.4.1"), ("A100-80GB", ["3g.40gb", "2g.20gb"], "25.3.2"), ("L4", None, "25.8.1")],
)
def test_two_nodes_differ_only_in_node_specific_attributes(
    product: str, layout: list[str] | None, release: str
) -> None:
    # GIVEN the devices of two nodes of one pool
    a, b = (
        slices_for_node(n, product, 2, driver_release=release, mig_layout=layout)[0]["spec"]["devices"]
        for n in ("node-a", "node-b")
    )

    def strip(devices: list[dict[str, object]]) -> list[object]:
        return [
            {
                **d,
                "attributes": {
                    k: v
                    for k, v in d["attributes"].items()  # type: ignore[attr-defined]
                    if k not in NODE_SPECIFIC_ATTRIBUTES
                },
            }
            for d in devices
        ]

    # THEN they differ (uuids), but not once the node-specific attributes are set aside
    assert a != b
    assert strip(a) == strip(b)
