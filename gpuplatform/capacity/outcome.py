"""What placing one moment found: the demands that did not fit and why, and each pool's use."""

from __future__ import annotations

from dataclasses import dataclass, field

from gpuplatform.capacity.demand import Demand

__all__ = ["Failure", "Outcome", "PoolUse"]


@dataclass(frozen=True)
class Failure:
    """A demand that did not fit, and why."""

    demand: Demand
    placed: int
    reason: str


@dataclass
class PoolUse:
    """A pool after placement: its mode, nodes, capacity and free units (GPUs or devices)."""

    name: str
    mode: str
    nodes: int
    capacity: int
    free: int
    source: str = "model"
    added: int = 0
    """Nodes its provisioner added for this moment's pods."""
    limit: int | None = None
    """Most nodes its provisioner may have (static pools: its nodes; None: no declared limit)."""
    ceiling: int | None = None
    """Capacity at that limit (None: unbounded)."""
    caveat: str = ""
    """Why a verdict that needs `added` nodes depends on the provisioner ("" = it does not)."""


@dataclass
class Outcome:
    """Everything one moment's placement found."""

    failures: list[Failure] = field(default_factory=list)
    pools: list[PoolUse] = field(default_factory=list)
    tiers: dict[str, int] = field(default_factory=dict)
    """Free DRA devices matching each tier's class."""
    bridged: int = 0
    """Device-plugin pods served by a bridge class."""
