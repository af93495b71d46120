"""GPU products and MIG profiles as the NVIDIA DRA driver publishes them, each with its source.

Memory is what the driver publishes: NVML's total for a full GPU (dra-driver-nvidia-gpu v0.4.1
`cmd/gpu-kubelet-plugin/nvlib.go`, `device.GetMemoryInfo()` `.Total`, published as a BinarySI
quantity in `deviceinfo.go`), the GI profile's `MemorySizeMB` for a MIG device (`mig.go`). That is
81559Mi for an H100 80GB HBM3, not 80Gi. `variance` is the catalog's known variance, a fraction of
the figure: a published figure further away than that is an inventory finding, an equal one never.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DRIVER_RELEASES", "MIG_PROFILES", "PRODUCTS", "MigProfile", "Product", "ReleaseFacts"]

SPECS = "NVIDIA published datasheet (architecture, compute capability)"
NVML = "NVML memory.total as nvidia-smi --query-gpu=name,memory.total prints it"
A100_40GB_SPREAD = 0.011
"""40536 MiB (older drivers) and 40960 MiB are both published for the same A100 40GB part."""
MIG_GUIDE = "NVIDIA MIG User Guide, supported-profiles tables (GB labels; MiB values derived, synthetic)"
SLICE = "real ResourceSlice samples/resourceslice-gpu.nvidia.com-v25.12.0-k8s-v1.36.yaml"
DOCS = "driver docs samples/resourceslice-device-entries.driver-docs.yaml"


@dataclass(frozen=True)
class MigProfile:
    """One MIG profile: NVML GI profile id, memory slices taken, capacities the driver publishes."""

    name: str
    gi_profile_id: int
    slices: int
    memory: str
    multiprocessors: int
    copy_engines: int
    decoders: int
    encoders: int
    jpeg_engines: int
    ofa_engines: int
    source: str = MIG_GUIDE
    variance: float = 0.02
    """Known variance of `memory` (derived figures: 2%)."""


@dataclass(frozen=True)
class Product:
    """A full GPU: the short key, NVML's productName and the attributes derived from it."""

    key: str
    product_name: str
    memory: str
    """What the driver publishes as `capacity.memory` (NVML's total)."""
    memory_source: str
    architecture: str
    compute_capability: str
    mig_family: str | None
    source: str = SPECS
    brand: str = "Nvidia"
    variance: float = 0.002
    """Known variance of `memory` as a fraction. The sources read show one NVML total per part across
    driver releases 535 to 595, so 0.2% (163Mi on an H100) only absorbs rounding; a device at the
    marketing figure (80Gi on an H100, +0.44%) is outside it."""


PRODUCTS: tuple[Product, ...] = (
    Product(
        "A100-40GB",
        "NVIDIA A100-SXM4-40GB",
        "40960Mi",
        f"{NVML}: 'NVIDIA A100-SXM4-40GB, 40960 MiB' (drivers 535.54.03, 550.90.07, 580.126.20); "
        "GPU Feature Discovery's nvidia.com/gpu.memory=40536 on older drivers",
        "Ampere",
        "8.0.0",
        "A100-40GB",
        variance=A100_40GB_SPREAD,
    ),
    Product(
        "A100-40GB-PCIE",
        "NVIDIA A100-PCIE-40GB",
        "40960Mi",
        f"{DOCS} (capacity 40Gi); {NVML}: 'NVIDIA A100-PCIE-40GB, 40960 MiB'",
        "Ampere",
        "8.0.0",
        "A100-40GB",
        DOCS,
        variance=A100_40GB_SPREAD,
    ),
    Product(
        "A100-80GB",
        "NVIDIA A100-SXM4-80GB",
        "81920Mi",
        f"{NVML}: 'NVIDIA A100-SXM4-80GB, 81920 MiB'",
        "Ampere",
        "8.0.0",
        "A100-80GB",
    ),
    Product(
        "A100-80GB-PCIE",
        "NVIDIA A100 80GB PCIe",
        "81920Mi",
        f"{NVML}: 'NVIDIA A100 80GB PCIe, 81920 MiB'",
        "Ampere",
        "8.0.0",
        "A100-80GB",
    ),
    Product(
        "H100-80GB",
        "NVIDIA H100 80GB HBM3",
        "81559Mi",
        f"{NVML}: 'NVIDIA H100 80GB HBM3, 81559 MiB' (drivers 580.126.09, 595.71.05)",
        "Hopper",
        "9.0.0",
        "H100-80GB",
    ),
    Product(
        "H200-141GB",
        "NVIDIA H200",
        "143771Mi",
        f"{NVML}: 'NVIDIA H200, 143771 MiB' (driver 580.126.09)",
        "Hopper",
        "9.0.0",
        "H200-141GB",
    ),
    Product(
        "B200",
        "NVIDIA B200",
        "183359Mi",
        f"{NVML}: 'NVIDIA B200, 183359 MiB' (drivers 580.126.09, 580.126.20, 595.71.05)",
        "Blackwell",
        "10.0.0",
        None,
    ),
    Product(
        "L40S",
        "NVIDIA L40S",
        "46068Mi",
        f"{NVML}: 'NVIDIA L40S, 46068 MiB' (drivers 550.54.15, 570.133.20, 580.159.03)",
        "Ada Lovelace",
        "8.9.0",
        None,
    ),
    Product(
        "L4",
        "NVIDIA L4",
        "23034Mi",
        f"{NVML}: 'NVIDIA L4, 23034 MiB' (drivers 550.54, 580.82.07, 580.159.03)",
        "Ada Lovelace",
        "8.9.0",
        None,
    ),
    Product(
        "GRID-A100-10C",
        "GRID A100-10C",
        "10Gi",
        SLICE,
        "Ampere",
        "8.0.0",
        None,
        SLICE,
        "NvidiaVCS",
        0.0,
    ),
)


def _profiles(rows: list[tuple[str, int, int, str, int, int, int, int, int, int]]) -> tuple[MigProfile, ...]:
    return tuple(MigProfile(*row) for row in rows)


MIG_PROFILES: dict[str, tuple[MigProfile, ...]] = {
    "A100-40GB": (
        MigProfile("1g.5gb", 19, 1, "4864Mi", 14, 1, 0, 0, 0, 0, DOCS),
        *_profiles(
            [
                ("1g.10gb", 15, 2, "9856Mi", 14, 1, 1, 0, 1, 0),
                ("2g.10gb", 14, 2, "9856Mi", 28, 2, 1, 0, 0, 0),
                ("3g.20gb", 9, 4, "19968Mi", 42, 3, 2, 0, 0, 0),
                ("4g.20gb", 5, 4, "19968Mi", 56, 4, 2, 0, 0, 0),
                ("7g.40gb", 0, 8, "40192Mi", 98, 7, 5, 0, 1, 1),
            ]
        ),
    ),
    "A100-80GB": _profiles(
        [
            ("1g.10gb", 19, 1, "9728Mi", 14, 1, 0, 0, 0, 0),
            ("1g.20gb", 15, 2, "19968Mi", 14, 1, 1, 0, 1, 0),
            ("2g.20gb", 14, 2, "19968Mi", 28, 2, 1, 0, 0, 0),
            ("3g.40gb", 9, 4, "40192Mi", 42, 3, 2, 0, 0, 0),
            ("4g.40gb", 5, 4, "40192Mi", 56, 4, 2, 0, 0, 0),
            ("7g.80gb", 0, 8, "80896Mi", 98, 7, 5, 0, 1, 1),
        ]
    ),
    "H100-80GB": _profiles(
        [
            ("1g.10gb", 19, 1, "9984Mi", 16, 1, 1, 0, 1, 0),
            ("1g.20gb", 15, 2, "20096Mi", 26, 1, 1, 0, 1, 0),
            ("2g.20gb", 14, 2, "20096Mi", 32, 2, 2, 0, 2, 0),
            ("3g.40gb", 9, 4, "40320Mi", 60, 3, 3, 0, 3, 0),
            ("4g.40gb", 5, 4, "40320Mi", 64, 4, 4, 0, 4, 0),
            ("7g.80gb", 0, 8, "80880Mi", 132, 8, 7, 0, 7, 1),
        ]
    ),
    "H200-141GB": _profiles(
        [
            ("1g.18gb", 19, 1, "16896Mi", 16, 1, 1, 0, 1, 0),
            ("1g.35gb", 15, 2, "33280Mi", 26, 1, 1, 0, 1, 0),
            ("2g.35gb", 14, 2, "33280Mi", 32, 2, 2, 0, 2, 0),
            ("3g.71gb", 9, 4, "66560Mi", 60, 3, 3, 0, 3, 0),
            ("4g.71gb", 5, 4, "66560Mi", 64, 4, 4, 0, 4, 0),
            ("7g.141gb", 0, 8, "143360Mi", 132, 8, 7, 0, 7, 1),
        ]
    ),
}


@dataclass(frozen=True)
class ReleaseFacts:
    """What one driver release publishes (dra-api.md §9.3) and how it names MIG devices."""

    release: str
    gpu_attributes: tuple[str, ...]
    mig_extra: tuple[str, ...]
    mig_naming: str
    extended_resource_name: bool
    vfio_class: bool


_COMMON = (
    "type",
    "uuid",
    "productName",
    "brand",
    "architecture",
    "cudaComputeCapability",
    "driverVersion",
    "cudaDriverVersion",
    "resource.kubernetes.io/pcieRoot",
)
_OLD = (*_COMMON, "pcieBusID")
_NEW = (*_COMMON, "resource.kubernetes.io/pciBusID", "addressingMode")
DRIVER_RELEASES: dict[str, ReleaseFacts] = {
    "25.3": ReleaseFacts(
        "25.3.2", (*_OLD, "minor", "index"), ("parentUUID", "profile", "parentIndex"), "old", False, False
    ),
    "25.8": ReleaseFacts("25.8.1", _OLD, ("parentUUID", "profile"), "old", False, False),
    "25.12": ReleaseFacts("25.12.0", _NEW, ("parentUUID", "profile"), "new", True, True),
    "0.4": ReleaseFacts("0.4.1", _NEW, ("parentUUID", "profile"), "new", True, True),
}
