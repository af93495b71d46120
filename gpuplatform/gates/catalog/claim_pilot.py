"""The `claim-pilot` gate: a Job of every wave it applies to."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpuplatform.gates.gate import CLAIMS, NODES, PODS, POOLS, SLICES, Gate, releases

if TYPE_CHECKING:
    from gpuplatform.plan.waves import Plan, WaveState


def _validation_runs(plan: Plan, state: WaveState) -> bool:
    """The wave runs the validation workload, in a tenant it serves."""
    v = plan.platform.validation
    return state.validation and v is not None and v.tenant in state.tenants


GATE = Gate(
    id="claim-pilot",
    title=(
        "the validation pod's claim is allocated on a DRA node, its container saw that device's "
        "UUID, and the claim is released once the gate removes the pod"
    ),
    job=True,
    reads=(NODES, PODS, CLAIMS, SLICES),
    data=(*POOLS, "validation"),
    applies=_validation_runs,
    access=releases("validation"),
    logs="$data.validation as $v | job_pods($in; $v.namespace; $v.job)[]",
    program=r"""
def gate_claim_pilot:
  . as $in
  | need($in; ["nodes", "pods", "resourceclaims", "resourceslices"]) // (
    dra_names(found($in)) as $dra | $data.validation as $v
    | job_pods($in; $v.namespace; $v.job) as $pods
    | if ($pods | length) == 0 then "unknown: no pod of the validation Job \($v.namespace)/\($v.job) yet"
      else ($pods | current) as $pod | ($pod | nsname) as $pn
      | if $pod.status.phase != "Running" then "unknown: validation pod \($pn) is \($pod.status.phase // "Pending"), not holding its claim"
        else ([($pod.status.resourceClaimStatuses // [])[] | select(.name == $v.claim) | .resourceClaimName][0]) as $cn
        | (if $cn == null then null else claim_result($in; $v.namespace; $cn) end) as $cr
        | if $cn == null then "unknown: validation pod \($pn) has no generated claim yet"
          elif $cr == null then "unknown: claim \($v.namespace)/\($cn) of \($pn) could not be read"
          elif $cr.result == null then "violation: claim \($v.namespace)/\($cn) of running pod \($pn) is not allocated by \($data.driver)"
          else $cr.result.pool as $pool | $cr.result.device as $device
          | device_uuid($in; $pool; $device) as $uuid
          | ($in.logs[$pn] // null) as $log
          | [ (if any($dra[]; . == $pool) | not then "violation: claim \($v.namespace)/\($cn) is allocated on \($pool), not a DRA node of this wave" else empty end),
              (if $pod.spec.nodeName != $pool then "violation: pod \($pn) runs on \($pod.spec.nodeName), its claim's device is on \($pool)" else empty end),
              (if $uuid == null then "violation: device \($pool)/\($device) has no uuid in its ResourceSlice" else empty end),
              (if $log == null then "unknown: the log of \($pn) was not read"
               elif ($log | uuids | length) == 0 then "unknown: \($pn) has printed no nvidia-smi -L line yet"
               elif $uuid != null and ($log | uuids | index($uuid)) == null then
                 "violation: the container of \($pn) saw \($log | uuids | join(", ")); its claim holds \($pool)/\($device) with uuid \($uuid)"
               else empty end) ] as $f
          | $f[],
            (if ($f | length) > 0 then empty
             else "proof: claim \($v.namespace)/\($cn) holds \($pool)/\($device) (uuid \($uuid)), seen by the container of \($pn) on \($pod.spec.nodeName)",
                  "act: release \($v.namespace) \($pod.metadata.name) \($cn)"
             end)
          end
        end
      end
  );
""",
)
