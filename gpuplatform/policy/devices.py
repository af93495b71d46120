"""The devices a platform's selectors are checked against: modelled from the catalog, or read from slices."""

from __future__ import annotations

from gpuplatform.errors import InputError, Problem
from gpuplatform.inventory.catalog import slices_for_node
from gpuplatform.inventory.resource_slices import Pool, normalise_slice
from gpuplatform.model.platform import Platform

__all__ = ["MODELLED_NODE_SUFFIX", "modelled_pools"]

#: Provisioner-managed pools have no node names; one representative node is modelled for them.
MODELLED_NODE_SUFFIX = "-modelled-0"
_FIELDS = {"product": "product", "gpusPerNode": "gpusPerNode", "migLayout": "migLayout"}


def modelled_pools(platform: Platform, file: str) -> tuple[dict[str, list[Pool]], list[Problem]]:
    """Per node pool, the ResourceSlice pools the DRA driver would publish for its nodes.

    A pool the catalog cannot model (unknown product or MIG layout) is a GP301 finding.
    """
    out: dict[str, list[Pool]] = {}
    problems: list[Problem] = []
    for i, pool in enumerate(platform.node_pools):
        nodes = pool.nodes or (f"{pool.name}{MODELLED_NODE_SUFFIX}",)
        try:
            modelled = []
            for node in nodes:
                slices = slices_for_node(
                    node,
                    pool.product,
                    pool.gpus_per_node,
                    driver_release=platform.dra_driver.chart_version,
                    mig_layout=pool.mig_layout or None,
                )
                normalised = [normalise_slice(s) for s in slices]
                modelled.append(Pool(node, normalised[0]["spec"]["driver"], node, 1, normalised))
            out[pool.name] = modelled
        except InputError as exc:
            first = exc.problems[0]
            if first.loc == "driverRelease":
                loc = "spec.draDriver.chartVersion"
            else:
                loc = f"spec.nodePools[{i}].{_FIELDS.get(first.loc, 'product')}"
            problems.append(Problem(file, loc, "GP301", f"cannot model pool {pool.name!r}: {first.message}"))
            out[pool.name] = []
    return out, problems
