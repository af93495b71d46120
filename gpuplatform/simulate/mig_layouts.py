"""MIG layouts: the mig-parted config naming one, and the device plugin's configuration for it.

- What the device plugin advertises for a layout: `inventory.device_plugin.advertised`.
- A pool's layout is named by its `migConfig` (`NodePool.mig_config_name`: `all-<profile>`, the
  GPU Operator's default mig-parted config names, or the team's own); any other `all-<profile>`
  is the operator's default config for the node's product (`inventory.catalog.default_mig_config`),
  `all-disabled` (the chart default) is whole GPUs, and a node labelled with any other name fails
  as mig-parted fails on a name its config file lacks.
"""

from __future__ import annotations

from gpuplatform.inventory.catalog import default_mig_config
from gpuplatform.simulate.model import Group
from gpuplatform.simulate.world import World

__all__ = ["DISABLED", "layout_of", "plugin_config"]

DISABLED = "all-disabled"


def layout_of(world: World, group: Group, name: str) -> tuple[str, ...] | None:
    """The layout config `name` gives `group`'s GPUs: a pool's `migConfig` first, then the GPU
    Operator's default config for the group's product; None for a config mig-parted does not know."""
    if name == DISABLED:
        return ()
    for pool in world.plan.platform.node_pools:
        if pool.mig_config_name == name:
            return pool.mig_layout
    return default_mig_config(world.plan.pools[group.pool].product, name)


def plugin_config(world: World, group: Group) -> str:
    """What a device plugin starting now on `group` works from: `<mig.strategy>:<mig config>`."""
    return f"{world.operator().mig_strategy}:{','.join(group.mig_layout) or 'whole GPUs'}"
