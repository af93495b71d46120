"""The `drained` evidence check: judged on a snapshot, it has no Job."""

from __future__ import annotations

from gpuplatform.gates.gate import NODES, PODS, Gate
from gpuplatform.labels import NVIDIA_RESOURCE_PREFIX

GATE = Gate(
    id="drained",
    title=(
        "no live pod on a node of a pool this drain wave empties holds a GPU: any nvidia.com/* "
        "request or limit (whole GPUs, MIG slices, time-sliced or renamed resources) or a resource "
        "claim"
    ),
    job=False,
    reads=(NODES, PODS),
    data=("pools", "drains"),
    applies=lambda plan, state: bool(state.drains),
    program=r"""
def gate_drained:
  . as $in
  | need($in; ["nodes", "pods"]) // (
    ($data.drains | name_set) as $draining
    | [found($in)[] | select(.name | member($draining))] as $fp
    | ([$in.pods[] | select(live)] | by_node) as $pods_on
    | coverage($fp),
      ($fp[] | . as $p
        | [.found[] as $n | ($pods_on[$n] // [])[] | select(holds_gpu)
           | "violation: pod \(nsname) on node \($n) of pool \($p.name), which this wave drains, holds "
             + ((held_resources + (if has_claims then ["a resource claim"] else [] end)) | join(", "))] as $v
        | $v[],
          (if ($v | length) > 0 then empty
           else "proof: pool \($p.name): no live pod on its \(.found | length) node(s) holds an @PLUGIN_RESOURCES@* resource or a resource claim" end))
  );
""".replace("@PLUGIN_RESOURCES@", NVIDIA_RESOURCE_PREFIX),
)
