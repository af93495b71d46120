"""The order in which an engine applies a wave: the same table drives Flux's `dependsOn` chain,
Argo CD's hook phases and sync-waves, `plan --from/--to`, the runbooks and the simulator.

The order is the same for every wave and both directions, because a wave is a state: whichever
way the engine arrives, the units that move the allocator off a node (`release`) run before the
releases change and before the node labels give the device plugin back, and the unit that hands a
node to the DRA driver (`enable`) runs only after the node labels took the device plugin away and
its check proved it gone.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

__all__ = ["SWITCH_LAYER", "SYNC_UNITS", "SyncUnit", "sync_unit", "unit_of_folder"]

#: Folder of the allocator-switch Jobs in every wave.
SWITCH_LAYER = "15-allocator-switch"


@dataclass(frozen=True)
class SyncUnit:
    """One thing the engine applies and waits for before the next.

    `folder` is relative to the wave; `argo_hook` is the Argo CD hook phase of its objects
    (`PreSync`, `Sync`, `PostSync`; empty for plain resources) and `argo_wave` their sync-wave.
    """

    id: str
    folder: str
    what: str
    argo_wave: int = 0
    argo_hook: str = ""


SYNC_UNITS: tuple[SyncUnit, ...] = (
    SyncUnit("gates-pre", "50-gates/pre", "pre-transition gates: block everything after them", 0, "PreSync"),
    SyncUnit(
        "release",
        f"{SWITCH_LAYER}/release",
        "allocator switch, first half: the DRA kubelet plugin leaves the nodes declared legacy",
        0,
        "Sync",
    ),
    SyncUnit("00-operators", "00-operators", "GPU Operator and DRA driver releases", 1),
    SyncUnit("10-nodes", "10-nodes", "node labels: the mode, the device plugin off on DRA nodes", 2),
    SyncUnit(
        "enable",
        f"{SWITCH_LAYER}/enable",
        "allocator switch, second half: once the device plugin is gone, the DRA kubelet plugin starts",
        3,
        "Sync",
    ),
    SyncUnit("20-device-classes", "20-device-classes", "tiers and bridge classes", 4),
    SyncUnit("30-policy", "30-policy", "admission policies", 5),
    SyncUnit("40-tenants", "40-tenants", "tenant namespaces, quotas, claim templates, workloads", 6),
    SyncUnit("gates-post", "50-gates/post", "post-transition gates: the wave's invariants", 7, "PostSync"),
)


def sync_unit(unit_id: str) -> SyncUnit:
    """The unit called `unit_id` (KeyError when there is none)."""
    for unit in SYNC_UNITS:
        if unit.id == unit_id:
            return unit
    raise KeyError(unit_id)


@cache
def unit_of_folder(folder: str) -> SyncUnit:
    """The unit a wave-relative folder (or one of its subfolders) belongs to."""
    best = max(
        (u for u in SYNC_UNITS if folder == u.folder or folder.startswith(u.folder + "/")),
        key=lambda u: len(u.folder),
        default=None,
    )
    if best is None:
        raise KeyError(folder)
    return best
