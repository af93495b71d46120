"""The `spec-nodes-exist` evidence check: judged on a snapshot, it has no Job."""

from __future__ import annotations

from gpuplatform.gates.gate import NODES, Gate, always

GATE = Gate(
    id="spec-nodes-exist",
    title=(
        "every node the spec names exists (a misspelt SSA Node would be a phantom), every pool can be found"
    ),
    job=False,
    reads=(NODES,),
    data=("pools",),
    applies=always,
    program=r"""
def gate_spec_nodes_exist:
  . as $in
  | need($in; ["nodes"]) // (
    found($in)[] | . as $p | .found as $found
    | if ($p.names | length) > 0 then
        (absent as $missing
         | ($missing[] | "violation: node \(.) of pool \($p.name) is not in the cluster"),
           (if ($missing | length) == 0 then "proof: pool \($p.name): \($found | join(", ")) present" else empty end))
      elif ($p.labels | length) == 0 then
        "violation: pool \($p.name) names neither nodes nor node labels: no gate can find its nodes"
      else "proof: pool \($p.name): \($found | length) node(s) labelled \($p.labels | to_entries | map("\(.key)=\(.value)") | join(","))"
      end
  );
""",
)
