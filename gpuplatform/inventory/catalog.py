"""A GPU catalog: the ResourceSlices the NVIDIA DRA driver would publish for a node, per driver release."""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Sequence
from typing import Any

from gpuplatform.errors import InputError
from gpuplatform.inventory.catalog_data import (
    DRIVER_RELEASES,
    MIG_PROFILES,
    PRODUCTS,
    MigProfile,
    Product,
    ReleaseFacts,
)

__all__ = [
    "DRIVER",
    "NODE_SPECIFIC_ATTRIBUTES",
    "default_mig_config",
    "known_product",
    "lookup_product",
    "mig_profiles",
    "product_for_label",
    "product_names",
    "published_attributes",
    "release_facts",
    "slices_for_node",
]

DRIVER = "gpu.nvidia.com"
DRIVER_VERSION = "580.126.20"
CUDA_VERSION = "13.0.0"
_NAMESPACE = uuid.UUID("6f1c9a52-3d0e-4f4e-9a57-0d5c6a2b8e11")
#: The only attributes whose values `slices_for_node` derives from the node's name: two nodes of one
#: pool publish devices that differ in nothing else (tests/inventory/test_catalog.py holds this).
NODE_SPECIFIC_ATTRIBUTES = frozenset(
    {"uuid", "parentUUID", "pcieBusID", "resource.kubernetes.io/pciBusID", "resource.kubernetes.io/pcieRoot"}
)
_BY_KEY = {p.key.lower(): p for p in PRODUCTS}
_BY_NAME = {p.product_name.lower(): p for p in PRODUCTS}


def product_names() -> list[str]:
    """Short catalog keys (`H100-80GB`, …) in catalog order."""
    return [p.key for p in PRODUCTS]


def known_product(product: str) -> bool:
    """Whether the catalog models `product` (by short key or productName)."""
    return (product.lower() in _BY_KEY) or (product.lower() in _BY_NAME)


def lookup_product(product: str) -> Product:
    """Find a product by short key or by NVIDIA's productName string (case-insensitive)."""
    found = _BY_KEY.get(product.lower()) or _BY_NAME.get(product.lower())
    if found is None:
        raise InputError.single(
            "<catalog>", "product", f"unknown GPU product {product!r}; known: {product_names()}"
        )
    return found


_SUFFIX = re.compile(r"-(SHARED|MIG-.*)$", re.IGNORECASE)
_BY_LABEL = {p.product_name.replace(" ", "-").lower(): p for p in PRODUCTS}


def product_for_label(label: str) -> Product | None:
    """The product whose GPU Feature Discovery label (`nvidia.com/gpu.product`) is `label`, if any.

    GFD writes the device name with every space as `-`, then `-SHARED` on a time-sliced GPU and
    `-MIG-<profile>` under the single MIG strategy (NVIDIA/k8s-device-plugin
    internal/lm/resource.go `productLabel`, commit 02f65cc): `NVIDIA-A100-SXM4-40GB`.
    """
    name = _SUFFIX.sub("", label).lower()
    return _BY_LABEL.get(name) or _BY_KEY.get(name) or _BY_NAME.get(name)


def release_facts(driver_release: str) -> ReleaseFacts:
    """Facts for `25.3`, `25.8.1`, `v25.12.0`, `0.4.1`, … (matched on major.minor)."""
    parts = driver_release.removeprefix("v").split(".")
    facts = DRIVER_RELEASES.get(".".join(parts[:2]))
    if facts is None:
        raise InputError.single("<catalog>", "driverRelease", f"unknown driver release {driver_release!r}")
    return facts


def mig_profiles(product: str) -> tuple[MigProfile, ...]:
    """The MIG profiles a product supports (empty when it has no MIG)."""
    family = lookup_product(product).mig_family
    return MIG_PROFILES.get(family, ()) if family else ()


def default_mig_config(product: str, name: str) -> tuple[str, ...] | None:
    """The per-GPU layout config `name` applies in the GPU Operator's default mig-parted config, or
    None when it has no such config for `product`: `all-<profile>` is as many instances of the
    profile as the GPU's 7 compute and 8 memory slices hold (`all-1g.10gb` 7 on an A100-80GB, 4 on
    an A100-40GB; `all-1g.20gb` 4; `all-3g.40gb` 2), as NVIDIA/gpu-operator v26.3.1
    `assets/state-mig-manager/0400_configmap.yaml` lists them per device filter."""
    profile = name.removeprefix("all-")
    for p in mig_profiles(product) if name.startswith("all-") else ():
        if p.name == profile:
            return (p.name,) * min(7 // int(p.name.split("g.")[0]), 8 // p.slices)
    return None


def published_attributes(driver_release: str, device_type: str = "gpu") -> frozenset[str]:
    """Attribute names a release publishes for `gpu` or `mig` devices (qualified names as in the slice)."""
    facts = release_facts(driver_release)
    if device_type == "gpu":
        return frozenset(facts.gpu_attributes)
    if device_type == "mig":
        base = [a for a in facts.gpu_attributes if a not in ("minor",)]
        return frozenset((*base, *facts.mig_extra))
    raise InputError.single("<catalog>", "deviceType", f"unknown device type {device_type!r}")


def _digest(*parts: object) -> str:
    return hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()


def _pci(node: str, index: int) -> tuple[str, str]:
    bus = (int(_digest(node)[:2], 16) % 8) * 0x20 + 0x10 * (index + 1)
    bus %= 0x100
    return f"0000:{bus:02x}:00.0", f"pci0000:{bus & 0xF0:02x}"


def _gpu_attributes(node: str, index: int, product: Product, facts: ReleaseFacts) -> dict[str, Any]:
    bus_id, root = _pci(node, index)
    values: dict[str, dict[str, Any]] = {
        "type": {"string": "gpu"},
        "uuid": {"string": f"GPU-{uuid.uuid5(_NAMESPACE, f'{node}/{index}')}"},
        "productName": {"string": product.product_name},
        "brand": {"string": product.brand},
        "architecture": {"string": product.architecture},
        "cudaComputeCapability": {"version": product.compute_capability},
        "driverVersion": {"version": DRIVER_VERSION},
        "cudaDriverVersion": {"version": CUDA_VERSION},
        "minor": {"int": index},
        "index": {"int": index},
        "pcieBusID": {"string": bus_id},
        "resource.kubernetes.io/pciBusID": {"string": bus_id},
        "resource.kubernetes.io/pcieRoot": {"string": root},
        "addressingMode": {"string": "None"},
    }
    return {k: values[k] for k in sorted(facts.gpu_attributes)}


def _place(profiles: Sequence[MigProfile]) -> list[tuple[MigProfile, int]]:
    used: set[int] = set()
    placed = []
    for profile in profiles:
        size = profile.slices
        start = next((s for s in range(0, 8, size) if not used & set(range(s, s + size))), None)
        if start is None:
            raise InputError.single(
                "<catalog>", "migLayout", f"MIG layout does not fit one GPU at {profile.name}"
            )
        used |= set(range(start, start + size))
        placed.append((profile, start))
    return placed


def _mig_devices(
    node: str, index: int, gpu: dict[str, Any], layout: Sequence[str], product: Product, facts: ReleaseFacts
) -> list[dict[str, Any]]:
    table = {p.name: p for p in mig_profiles(product.key)}
    unknown = [name for name in layout if name not in table]
    if unknown:
        raise InputError.single("<catalog>", "migLayout", f"{product.key} has no MIG profile {unknown[0]!r}")
    devices = []
    for profile, start in _place([table[name] for name in layout]):
        if facts.mig_naming == "old":
            name = f"gpu-{index}-mig-{profile.gi_profile_id}-{start}-{profile.slices}"
        else:
            name = f"gpu-{index}-mig-{profile.name.replace('.', '')}-{profile.gi_profile_id}-{start}"
        attributes = {k: v for k, v in gpu.items() if k not in ("minor", "index")}
        attributes["type"] = {"string": "mig"}
        attributes["uuid"] = {"string": f"MIG-{uuid.uuid5(_NAMESPACE, f'{node}/{index}/{name}')}"}
        attributes["parentUUID"] = gpu["uuid"]
        attributes["profile"] = {"string": profile.name}
        if "parentIndex" in facts.mig_extra:
            attributes["parentIndex"] = {"int": index}
            attributes["index"] = {"int": start}
        capacity = {
            "copyEngines": {"value": str(profile.copy_engines)},
            "decoders": {"value": str(profile.decoders)},
            "encoders": {"value": str(profile.encoders)},
            "jpegEngines": {"value": str(profile.jpeg_engines)},
            "memory": {"value": profile.memory},
            "multiprocessors": {"value": str(profile.multiprocessors)},
            "ofaEngines": {"value": str(profile.ofa_engines)},
        }
        capacity.update({f"memorySlice{s}": {"value": "1"} for s in range(start, start + profile.slices)})
        devices.append({"name": name, "attributes": dict(sorted(attributes.items())), "capacity": capacity})
    return devices


def slices_for_node(
    node_name: str,
    product: str,
    count: int,
    *,
    driver_release: str = "0.4.1",
    mig_layout: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """The v1 ResourceSlices the driver publishes for `count` GPUs of `product` (MIG per `mig_layout`)."""
    if count < 0:
        raise InputError.single("<catalog>", "gpusPerNode", f"GPU count must not be negative, got {count}")
    spec, facts = lookup_product(product), release_facts(driver_release)
    devices: list[dict[str, Any]] = []
    for index in range(count):
        gpu = _gpu_attributes(node_name, index, spec, facts)
        if mig_layout:
            devices.extend(_mig_devices(node_name, index, gpu, mig_layout, spec, facts))
        else:
            devices.append(
                {"name": f"gpu-{index}", "attributes": gpu, "capacity": {"memory": {"value": spec.memory}}}
            )
    suffix = _digest(node_name, facts.release)[:5]
    return [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": f"{node_name}-{DRIVER}-{suffix}"},
            "spec": {
                "driver": DRIVER,
                "nodeName": node_name,
                "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
                "devices": devices,
            },
        }
    ]
