"""Python twins of the gate programs: `evidence`'s cache, which judges a snapshot instead of jq.

Only `evidence` reads them (a million pods would take it past 30 s through jq alone); `simulate`
runs the program the rendered script holds, and a gate needs no twin (`kueue-admission` has none).

The programs say a line or more per node and read every pod of a node: at 2,000 nodes of a GPU
Operator cluster (~12,000 pods) jq, at about 3 µs a step, spent ~2.5 s on them, Python ~0.3 s.
Each twin says exactly the lines its jq program (`gates/programs.py`) says, in the same order, for the document the program reads offline (Nodes and Pods projected,
ResourceSlices summed up by kind) and the same `$data`; the gate Job keeps running the program.

A twin reads the fields with the types the API serves them in. Anything else (a label that is not a
string, a container status that is not an object, a quantity jq would not read as a number) raises
`Unlike`, and the evaluator runs the jq program for that gate instead: the twins need to match jq
only where the API's types hold. Tests hold every twin to its program, line for line, on every
gate scenario, on the benchmark fleet healthy and broken, and on generated clusters.

`reading` reads fields as the API types them and holds what several programs share; `nodes`,
`claims` and `validation` hold the twins of the programs that judge nodes, claims and the
validation pods.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpuplatform.evidence.twins.claims import claim_placement, cleanup, rollback_safety
from gpuplatform.evidence.twins.drained import drained
from gpuplatform.evidence.twins.nodes import allocator_exclusivity, inventory, operands, spec_nodes_exist
from gpuplatform.evidence.twins.reading import Lines, Object, Unlike, found
from gpuplatform.evidence.twins.validation import bridge, claim_pilot, early_bridge

__all__ = ["TWINS", "Unlike", "found"]

#: gate id -> its twin: (the document as the program reads it, `$data`, the pools' nodes) -> lines.
TWINS: dict[str, Callable[[Object, Object, list[dict[str, Any]]], Lines]] = {
    "allocator-exclusivity": allocator_exclusivity,
    "inventory": inventory,
    "operands": operands,
    "rollback-safety": rollback_safety,
    "claim-pilot": claim_pilot,
    "bridge": bridge,
    "early-bridge": early_bridge,
    "claim-placement": claim_placement,
    "cleanup": cleanup,
    "spec-nodes-exist": spec_nodes_exist,
    "drained": drained,
}
