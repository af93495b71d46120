"""The `cleanup` evidence check: judged on a snapshot, it has no Job."""

from __future__ import annotations

from gpuplatform.gates.gate import CLAIMS, PODS, Gate, always

GATE = Gate(
    id="cleanup",
    title="no claim stays reserved for, or allocated to, a pod that finished or no longer exists",
    job=False,
    reads=(PODS, CLAIMS),
    data=(),
    applies=always,
    program=r"""
def gate_cleanup:
  . as $in
  | need($in; ["pods", "resourceclaims"]) // (
    ([$in.pods[] | {key: .metadata.uid, value: .}] | entries_object) as $pods
    | [ ($in.resourceclaims[] | . as $c | (.status.reservedFor // [])[] | select(.resource == "pods")
          | $pods[.uid] as $pod
          | if $pod == null then "violation: claim \($c | nsname) is reserved for pod \(.name), which no longer exists"
            elif ($pod | live | not) then "violation: claim \($c | nsname) is still reserved for pod \(.name), which has finished (\($pod.status.phase))"
            else empty end),
        ($in.resourceclaims[] | select(.status.allocation != null) | . as $c
          | (.metadata.ownerReferences // [])[] | select(.kind == "Pod" and .controller == true)
          | $pods[.uid] as $pod
          | if $pod == null then "violation: claim \($c | nsname) of pod \(.name), which no longer exists, is still allocated"
            elif ($pod | live | not) then "violation: claim \($c | nsname) of finished pod \(.name) is still allocated"
            else empty end) ] as $v
    | $v[],
      (if ($v | length) > 0 then empty
       else "proof: \([$in.resourceclaims[] | select(.status.allocation != null)] | length) allocated claim(s), each reserved only for pods that exist and may run" end)
  );
""",
)
