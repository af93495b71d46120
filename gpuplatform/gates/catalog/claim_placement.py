"""The `claim-placement` evidence check: judged on a snapshot, it has no Job."""

from __future__ import annotations

from gpuplatform.gates.gate import CLAIMS, NODES, POOLS, Gate, always

GATE = Gate(
    id="claim-placement",
    title="claims are allocated only on nodes this wave declares DRA",
    job=False,
    reads=(NODES, CLAIMS),
    data=POOLS,
    applies=always,
    program=r"""
def gate_claim_placement:
  . as $in
  | need($in; ["nodes", "resourceclaims"]) // (
    (dra_names(found($in)) | name_set) as $is_dra
    | [$in.resourceclaims[] | select((claim_nodes | length) > 0)] as $claims
    | if ($claims | length) == 0 then "proof: no claim holds a \($data.driver) device"
      else $claims[] | . as $c | claim_nodes[] as $n
      | ([($c.status.allocation.devices.results // [])[] | select(.driver == $data.driver)
          | "\(.driver)/\(.pool)/\(.device)"] | join(", ")) as $where
      | if $n | member($is_dra) then "proof: claim \($c | nsname): \($where)"
        else "violation: claim \($c | nsname) is allocated on \($n), not a DRA node of this wave (\($where))" end
      end
  );
""",
)
