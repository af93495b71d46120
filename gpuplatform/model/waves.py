"""Waves: the ordered states a migration passes through."""

from __future__ import annotations

from typing import Literal, get_args

from gpuplatform.model.base import Description, DnsLabel, SpecModel
from gpuplatform.model.classes import BridgeClass, ServiceTier
from gpuplatform.model.fields import Refs, default
from gpuplatform.model.tenants import Tenant

__all__ = ["STAGES", "Stage", "Wave"]

Stage = Literal[
    "baseline",
    "pilot-pool",
    "driver-validation",
    "native-claim-pilot",
    "compatibility-bridge",
    "application",
    "nim-non-production",
    "scale",
    "drain",
    "final-cutover",
]
#: Canonical stage order (the Literal's order); `drain` may stand between any two stages.
STAGES: tuple[Stage, ...] = get_args(Stage)


class Wave(SpecModel):
    """One wave: a stage plus what it turns on; everything stays on in later waves.

    Pools migrate through `NodePool.migratesIn`, workloads through `Workload.movesIn`.
    """

    name: DnsLabel
    """Wave name; its folder is `waves/<NN>-<name>/`."""
    stage: Stage
    """What the wave is in the migration; stages run in canonical order, `drain` between any two."""
    description: Description = ""
    """What the wave does, for people (the first line of its runbook)."""
    tiers: Refs[ServiceTier] = default(())
    """Tiers published from this wave on."""
    bridges: Refs[BridgeClass] = default(())
    """Bridge classes enabled from this wave on."""
    tenants: Refs[Tenant] = default(())
    """Tenants onboarded from this wave on."""
    production: bool = False
    """The wave carries production traffic (preview features are refused unless accepted)."""
