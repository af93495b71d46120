"""A realistic benchmark fleet: `FLEET_NODES` static nodes (default 2000), 8 GPUs each.

A valid platform (`gpuplatform check benchmarks/fleet.py` exits 0) at every size from 11 nodes to
8,000 and beyond (a platform may list 15,000): early static and Karpenter pools, together
about a quarter of the fleet, then pools of at most 100 nodes of several products and
MIG layouts (A100, H100, H200), 40 service tiers (architecture, memory, product, MIG profile,
CEL), a bridge class, one team per 20 nodes below 2,000 (100 from 2,000) with claim templates,
legacy workloads and NIM services, and waves that move pools and claims apart, each of which fits
(`capacity --all`). Usable as a stack: `FLEET_NODES=2000 gpuplatform synth benchmarks/fleet.py --out DIR`.
`FLEET_WAVES` (default 9, at most 32, the platform limit) splits the `scale` wave into batches of
pools, as a large fleet moves them: `FLEET_NODES=14997 FLEET_WAVES=32` is the documented limit.
"""

from __future__ import annotations

import os

from gpuplatform.model import (
    AttributeSelector,
    BridgeClass,
    CapacitySelector,
    ClaimTemplate,
    Delivery,
    DraDriver,
    GpuOperator,
    NimService,
    NodePool,
    Platform,
    Provisioner,
    ServiceTier,
    Tenant,
    Wave,
    Workload,
)
from gpuplatform.model.waves import STAGES as MODEL_STAGES

#: Pool kinds in rotation: (product, MIG layout per GPU).
POOL_KINDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("H100-80GB", ()),
    ("A100-80GB", ()),
    ("H100-80GB", ("3g.40gb", "3g.40gb")),
    ("H200-141GB", ()),
    ("L40S", ()),
    ("A100-40GB", ("1g.5gb",) * 7),
    ("B200", ()),
    ("A100-80GB", ("2g.20gb", "2g.20gb", "3g.40gb")),
    ("L4", ()),
    ("H200-141GB", ("4g.71gb", "3g.71gb")),
    ("H100-80GB", ("1g.10gb",) * 7),
)
#: Karpenter-provisioned pools (one modelled node each; their nodes come and go).
KARPENTER_POOLS: tuple[tuple[str, str], ...] = (("burst-h100", "H100-80GB"), ("burst-l4", "L4"))
#: The stages in order, without `drain` (no pool moves in a wave that changes claims): `scale` is
#: one wave, or `FLEET_WAVES - 8` waves moving batches of pools.
STAGES = tuple(s for s in MODEL_STAGES if s != "drain")
#: Teams at the headline size (2,000 nodes and more); smaller fleets have one team per 20 nodes.
TENANTS = 100
D = "device.attributes['gpu.nvidia.com']"


def _tiers() -> list[ServiceTier]:
    """40 tiers, each matching devices of some pool kind."""
    tiers = [
        ServiceTier(name="hopper", architecture="Hopper"),
        ServiceTier(name="hopper-80g", architecture="Hopper", min_memory="80Gi"),
        ServiceTier(name="hopper-141g", architecture="Hopper", min_memory="140Gi"),
        ServiceTier(name="ampere", architecture="Ampere"),
        ServiceTier(name="ampere-80g", architecture="Ampere", min_memory="80Gi"),
        ServiceTier(name="ampere-up-to-80g", architecture="Ampere", min_memory="40Gi", max_memory="80Gi"),
        ServiceTier(name="blackwell", architecture="Blackwell"),
        ServiceTier(name="ada", architecture="Ada Lovelace"),
        ServiceTier(name="ada-48g", architecture="Ada Lovelace", min_memory="40Gi"),
        ServiceTier(name="inference-small", max_memory="24Gi"),
        ServiceTier(name="large-memory", min_memory="100Gi"),
        ServiceTier(name="h100", product_name="H100"),
        ServiceTier(name="h200", product_name="H200"),
        ServiceTier(name="a100", product_name="A100"),
        ServiceTier(name="b200", product_name="B200"),
        ServiceTier(name="l40s", product_name="L40S"),
        ServiceTier(name="l4", product_name="^NVIDIA L4$"),
        ServiceTier(name="cc90", min_compute_capability="9.0.0"),
        ServiceTier(name="cc80", min_compute_capability="8.0.0", max_memory="80Gi"),
        ServiceTier(name="driver-580", min_driver_version="580.0.0", architecture="Hopper"),
    ]
    migs = [
        "3g.40gb",
        "1g.5gb",
        "2g.20gb",
        "4g.71gb",
        "3g.71gb",
        "1g.10gb",
    ]
    tiers += [ServiceTier(name=f"mig-{p.replace('.', '-')}", device_type="mig", mig_profile=p) for p in migs]
    tiers += [
        ServiceTier(name="mig-small", device_type="mig", max_memory="10Gi"),
        ServiceTier(name="mig-medium", device_type="mig", min_memory="19Gi", max_memory="41Gi"),
        ServiceTier(name="mig-large", device_type="mig", min_memory="60Gi"),
        ServiceTier(name="mig-hopper", device_type="mig", architecture="Hopper"),
        ServiceTier(name="mig-ampere", device_type="mig", architecture="Ampere"),
    ]
    cel = [
        f"{D}.type == 'gpu' && {D}.productName.lowerAscii().contains('h100')",
        f"{D}.type == 'gpu' && {D}.architecture in ['Hopper', 'Blackwell']",
        f"{D}.type == 'mig' && {D}.profile.startsWith('1g')",
        f"{D}.type == 'mig' && device.capacity['gpu.nvidia.com'].multiprocessors.compareTo(quantity('40')) >= 0",
        f"cel.bind(g, {D}, g.type == 'gpu' && g.brand == 'Nvidia' && g.driverVersion.major() >= 570)",
        f"{D}.type == 'gpu' && {D}.cudaComputeCapability.compareTo(semver('8.9.0')) == 0",
        f"{D}.type == 'gpu' && device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('150Gi')) > 0",
        f"{D}.type == 'mig' && 'profile' in {D} && {D}.profile.endsWith('gb')",
        f"{D}.type == 'gpu' && {D}.productName.matches('(?i)a100.*80gb')",
    ]
    tiers += [
        ServiceTier(name=f"custom-{i}", cel=expression, device_type="mig" if "'mig'" in expression else "gpu")
        for i, expression in enumerate(cel)
    ]
    return tiers


def _static_pool(name: str, kind: int, nodes: tuple[str, ...], migrates_in: str | None) -> NodePool:
    product, layout = POOL_KINDS[kind % len(POOL_KINDS)]
    return NodePool(
        name=name,
        nodes=nodes,
        product=product,
        gpus_per_node=8,
        mig_layout=layout,
        # a layout of several profiles is the team's own mig-parted config
        mig_config="fleet-mixed" if len(set(layout)) > 1 else None,
        migrates_in=migrates_in,
    )


def _scale_waves() -> tuple[str, ...]:
    """The names of the scale waves: `scale`, or `scale-01` ... when `FLEET_WAVES` is over 9."""
    count = int(os.environ.get("FLEET_WAVES", str(len(STAGES)))) - len(STAGES) + 1
    if count <= 1:
        return ("scale",)
    return tuple(f"scale-{k:02d}" for k in range(1, count + 1))


def _pools(nodes: int, scale: tuple[str, ...]) -> list[NodePool]:
    """Early pools (one of every kind, about a quarter of the fleet), the rest in pools of at most
    100, then Karpenter.

    The early pools move first, so every tier has enough DRA devices for the claims and the
    workloads that move before `scale` (`gpuplatform capacity` says every wave fits); half of the
    other pools (the later ones) move in `scale` (in batches, one per scale wave), the first ones and
    the Karpenter pools at the final cutover. Pools never move in a wave that
    also changes claims, so no drain wave is needed.
    """
    per_pilot = max(1, nodes // (4 * len(POOL_KINDS)))
    pools = [
        _static_pool(
            f"pilot-{k:02d}", k, tuple(f"gpu-pilot-{k:02d}-{j}" for j in range(per_pilot)), "pilot-pool"
        )
        for k in range(len(POOL_KINDS))
    ]
    rest = max(0, nodes - per_pilot * len(POOL_KINDS))
    count = -(-rest // 100)
    sizes = [rest // count + (1 if i < rest % count else 0) for i in range(count)] if count else []
    moving = count - count // 2
    pools += [
        _static_pool(
            f"pool-{i:03d}",
            i,
            tuple(f"gpu-{i:03d}-{j:03d}" for j in range(size)),
            scale[(i - count // 2) * len(scale) // moving] if i >= count // 2 else None,
        )
        for i, size in enumerate(sizes)
    ]
    pools += [
        NodePool(
            name=name,
            provisioner=Provisioner(kind="karpenter", name=f"gpu-{name}"),
            product=product,
        )
        for name, product in KARPENTER_POOLS
    ]
    return pools


def _tenants(tiers: list[ServiceTier], nodes: int) -> list[Tenant]:
    """Teams entitled to two tiers each, with a one-device and a four-device claim template."""
    out = []
    for t in range(max(2, min(TENANTS, nodes // 20))):
        first, second = tiers[t % len(tiers)].name, tiers[(t + 7) % len(tiers)].name
        out.append(
            Tenant(
                name=f"team-{t:03d}",
                environment="production" if t % 4 == 0 else "development",
                tiers=(first, second),
                bridge=t == 1,
                groups=(f"team-{t:03d}-ops",),
                owner=f"owner-{t % 12}",
                claim_templates=(
                    ClaimTemplate(name="one-device", tier=first, count=1),
                    ClaimTemplate(name="four-devices", tier=second, count=4),
                ),
            )
        )
    return out


def _workloads(tenants: list[Tenant]) -> list[Workload]:
    """One legacy Deployment per tenant, moving to claims in the application wave."""
    return [
        Workload(
            kind="Deployment" if t % 3 else "StatefulSet",
            namespace=tenant.name,
            name=f"trainer-{t:03d}",
            gpus=1 + t % 4,
            tier=tenant.tiers[0],
            moves_in="application",
        )
        for t, tenant in enumerate(tenants)
    ]


def _nim_services(tenants: list[Tenant]) -> list[NimService]:
    """NIM services of development tenants (blue/green against the legacy service)."""
    services = []
    for t, tenant in enumerate(tenants[1::4][:12]):
        services.append(
            NimService(
                name=f"llm-{t:02d}-dra",
                namespace=tenant.name,
                replaces=f"llm-{t:02d}",
                tier=tenant.tiers[0],
                attribute_selectors=(AttributeSelector(key="brand", op="Equal", value="Nvidia"),)
                if t % 2 == 0
                else (),
                capacity_selectors=(CapacitySelector(key="memory", op="GreaterThanOrEqual", value="4Gi"),)
                if t % 2 == 0
                else (),
                mode="template" if t % 4 == 1 else "claimCreationSpec",
                moves_in="nim-non-production",
            )
        )
    return services


def build() -> Platform:
    """The fleet, sized by the environment variable FLEET_NODES."""
    nodes = int(os.environ.get("FLEET_NODES", "2000"))
    scale = _scale_waves()
    tiers = _tiers()
    tenants = _tenants(tiers, nodes)
    claim_tenants = [t.name for t in tenants[:10]]
    waves = []
    names = [(s, s) for s in STAGES if s != "scale"]
    names[-1:-1] = [(name, "scale") for name in scale]
    for name, stage in names:
        wave_tiers = [
            t.name
            for t in tiers
            if (stage == "native-claim-pilot" and t.device_type == "gpu")
            or (stage == "application" and t.device_type == "mig")
        ]
        wave_tenants = (
            claim_tenants
            if stage == "native-claim-pilot"
            else [t.name for t in tenants[10:]]
            if stage == "application"
            else []
        )
        bridges = ["legacy-gpu"] if stage == "compatibility-bridge" else []
        waves.append(
            Wave(name=name, stage=stage, tiers=wave_tiers, tenants=wave_tenants, bridges=bridges)  # type: ignore[arg-type]
        )
    return Platform(
        name="fleet",
        domain="fleet.example.com",
        # mixed: its pools mix MIG profiles on a GPU, which the device plugin's `single` refuses
        gpu_operator=GpuOperator(managed=True, values={"mig": {"strategy": "mixed"}}),
        dra_driver=DraDriver(chart_repository="oci://registry.example.com/charts"),
        node_pools=_pools(nodes, scale),
        tiers=tiers,
        bridges=[BridgeClass(name="legacy-gpu", tier="hopper")],
        tenants=tenants,
        workloads=_workloads(tenants),
        nim_services=_nim_services(tenants),
        waves=waves,
        active_wave="application",
        delivery=Delivery(engines=["argocd", "flux"], repo_url="https://git.example.com/fleet.git"),
    )
