"""A gate Job of the simulated sync, judged by its real program on the model's cluster.

The gate's program (its Python twin, held line for line to the jq program the Job runs,
`evidence/twins/`) reads the snapshot `gpuplatform snapshot` would take of the model's cluster
(`snapshot.py`) and the facts the Job mounts. A group of identical nodes says the same of each of its
nodes, so the program reads one node per group and each pool's coverage is counted on the group's
nodes (`_pools`): the verdict is the one the program gives on every node, the lines name one node per
group. The document is built once per state of the cluster and reused by the gates that read it.
"""

from __future__ import annotations

from typing import Any

from gpuplatform.evidence.twins import TWINS, found
from gpuplatform.simulate.snapshot import cluster_snapshot
from gpuplatform.simulate.snapshot_nodes import summarised_slices
from gpuplatform.simulate.world import World

__all__ = ["gate_lines", "holds", "modelled"]

_KINDS = ("nodes", "pods", "resourceclaims", "deviceclasses")


def modelled(gate: str) -> bool:
    """Whether the gate has a program the simulator can run (a twin)."""
    return gate in TWINS


def holds(lines: list[str]) -> bool:
    """The gate script's verdict: it holds when the program says no `violation:` or `unknown:` line."""
    return not any(line.startswith(("violation: ", "unknown: ")) for line in lines)


def _document(world: World) -> dict[str, Any]:
    snapshot = cluster_snapshot(world, every_node=False)
    document: dict[str, Any] = {kind: snapshot.kinds[kind] for kind in _KINDS}
    document["resourceslices"] = [
        s for group in world.cluster.groups for s in summarised_slices(world, group, group.nodes[0])
    ]
    document["logs"] = snapshot.runtime_logs()
    return document


def _pools(world: World, pools: list[dict[str, Any]], nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each pool of the facts with its nodes as one node per group: a named node stands for its group,
    a pool found by labels needs `minNodes` nodes in the groups it matches."""
    size = {g.nodes[0]: len(g.nodes) for g in world.cluster.groups}
    labels = {n["metadata"]["name"]: n["metadata"]["labels"] for n in nodes}
    out = []
    for pool in pools:
        if pool["names"]:
            mine = [g for g in world.cluster.groups if g.pool == pool["name"]]
            shown = [g.nodes[0] for g in mine]
            if sum(len(g.nodes) for g in mine) != len(pool["names"]):
                modelled_nodes = {n for g in mine for n in g.nodes}
                shown += [n for n in pool["names"] if n not in modelled_nodes]
            out.append(pool | {"names": shown, "minNodes": len(shown)})
            continue
        want = pool["labels"].items()
        count = sum(n for name, n in size.items() if want and all(labels[name].get(k) == v for k, v in want))
        out.append(pool | {"minNodes": 0 if count >= pool["minNodes"] else pool["minNodes"]})
    return out


def gate_lines(world: World, gate: str, data: dict[str, Any]) -> list[str]:
    """What gate `gate`'s program says on the model's cluster now, with the Job's facts `data`."""
    document = _document(world)
    if "pools" in data:
        data = data | {"pools": _pools(world, data["pools"], document["nodes"])}
    pools = found(document, data) if "pools" in data else []
    return TWINS[gate](document, data, pools)
