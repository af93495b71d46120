"""The `rollback-safety` gate: a Job of every wave it applies to."""

from __future__ import annotations

from gpuplatform.gates.gate import CLAIMS, NODES, PODS, POOLS, Gate

GATE = Gate(
    id="rollback-safety",
    title=(
        "no claim is allocated, and no pod holding a claim is terminating, on a node this wave does "
        "not declare DRA"
    ),
    job=True,
    protects=("00-operators", "10-nodes"),
    reads=(NODES, PODS, CLAIMS),
    data=(*POOLS, "driverInstalled"),
    applies=lambda plan, state: bool(state.legacy_pools) or not state.driver_installed,
    program=r"""
def gate_rollback_safety:
  . as $in
  | need($in; ["nodes", "pods", "resourceclaims"]) // (
    found($in) as $fp | dra_names($fp) as $dra | ($dra | name_set) as $is_dra
    | def outside($n): ($data.driverInstalled | not) or ($n | member($is_dra) | not);
      def why: if $data.driverInstalled then "which this wave does not declare DRA" else "and this wave has no DRA driver" end;
      [ ($in.resourceclaims[] | . as $c | claim_nodes[] | select(outside(.))
          | "violation: claim \($c | nsname) is allocated on node \(.), \(why)"),
        ($in.pods[] | select(.metadata.deletionTimestamp != null and has_claims) | . as $pod
          | (.spec.nodeName // "") | select(. != "" and outside(.))
          | "violation: pod \($pod | nsname) with a resource claim is still terminating on node \(.), \(why)") ] as $v
    | $v[],
      (if ($v | length) > 0 then empty
       elif $data.driverInstalled then "proof: no claim allocated and no claim-holding pod terminating outside the DRA nodes (\($dra | join(", ")))"
       else "proof: no \($data.driver) claim allocated anywhere and no claim-holding pod terminating" end)
  );
""",
)
