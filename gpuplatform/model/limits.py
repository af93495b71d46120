"""How much work a spec may ask for: bounded by what a real cluster needs, refused before rendering.

An 8 MiB spec can list hundreds of thousands of nodes; rendered for every wave that would be
millions of files, minutes and gigabytes. The size of a platform (one cluster) has one limit: it
lists at most MAX_NODES nodes (the largest managed clusters, `model.base.MAX_CLUSTER_NODES`) in at
most MAX_WAVES waves. MAX_FILES follows from it, so that no platform within it is refused for its
files: every wave renders a file per node and at most ~5,000 others for 15,000 nodes (the benchmark
fleet renders 150,021 files at 15,000 nodes and 9 waves, about 25,000 at 2,000). It still refuses
a spec whose other lists (tenants, workloads, NIM services) would render more than that, and a run
of several platforms at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpuplatform.model.base import MAX_CLUSTER_NODES
from gpuplatform.model.references import Loc

if TYPE_CHECKING:
    from gpuplatform.model.platform import Platform

__all__ = ["MAX_FILES", "MAX_NODES", "MAX_WAVES", "estimated_files", "size_errors"]

MAX_NODES = MAX_CLUSTER_NODES
MAX_WAVES = 32
#: What a MAX_NODES platform renders through MAX_WAVES waves, with room for its other objects.
MAX_FILES = MAX_WAVES * (MAX_NODES + 5_000)
#: Files every wave renders whatever the spec holds (kustomizations, operators, policy, gates).
_FIXED_PER_WAVE = 40


def estimated_files(p: Platform) -> int:
    """An upper estimate of the files `synth` renders for `p` (every wave repeats its objects)."""
    nodes = sum(len(pool.nodes) for pool in p.node_pools)
    templates = sum(len(t.claim_templates) for t in p.tenants)
    per_wave = (
        nodes
        + 2 * len(p.node_pools)
        + len(p.tiers)
        + len(p.bridges)
        + 8 * len(p.tenants)
        + templates
        + 3 * len(p.workloads)
        + 3 * len(p.nim_services)
        + _FIXED_PER_WAVE
    )
    return len(p.waves) * per_wave


def size_errors(p: Platform) -> list[tuple[Loc, str]]:
    """Refusals of a platform bigger than one cluster, or whose rendering exceeds MAX_FILES."""
    errors: list[tuple[Loc, str]] = []
    nodes = sum(len(pool.nodes) for pool in p.node_pools)
    if nodes > MAX_NODES:
        errors.append(
            (
                ("spec", "nodePools"),
                f"lists {nodes} nodes; one cluster has at most {MAX_NODES} (Kubernetes' limit)",
            )
        )
    if len(p.waves) > MAX_WAVES:
        errors.append((("spec", "waves"), f"has {len(p.waves)} waves, over the limit of {MAX_WAVES}"))
    files = estimated_files(p)
    if not errors and files > MAX_FILES:
        errors.append(
            (
                ("spec",),
                f"would render about {files} files (waves x objects), over the limit of {MAX_FILES} "
                f"(what {MAX_NODES} nodes render through {MAX_WAVES} waves); use fewer waves or split the platform",
            )
        )
    return errors
