"""The `bridge` gate: a Job of every wave it applies to."""

from __future__ import annotations

from gpuplatform.gates.gate import CLAIMS, NODES, PODS, POOLS, SLICES, Gate, releases

GATE = Gate(
    id="bridge",
    title=(
        "an unchanged nvidia.com/gpu pod sees exactly one GPU on a legacy node (device plugin) and "
        "on a DRA node (bridge claim)"
    ),
    job=True,
    reads=(NODES, PODS, CLAIMS, SLICES),
    data=(*POOLS, "bridge"),
    applies=lambda plan, state: bool(state.bridges),
    access=releases("gates"),
    logs="$data.bridge as $b | $b.sides[] | job_pods($in; $b.namespace; .job)[]",
    program=r"""
def gate_bridge:
  . as $in
  | need($in; ["nodes", "pods", "resourceclaims", "resourceslices"]) // (
    found($in) as $fp | dra_names($fp) as $dra | [$fp[] | select(.mode == "legacy") | .found[]] as $legacy
    | $data.bridge as $b
    | [ $b.sides[] as $side
        | job_pods($in; $b.namespace; $side.job) as $pods
        | if ($pods | length) == 0 then "unknown: no pod of the bridge Job \($b.namespace)/\($side.job) yet"
          else ($pods | current) as $pod | ($pod | nsname) as $pn | ($pod.spec.nodeName // "") as $node
          | ($pod.status.extendedResourceClaimStatus.resourceClaimName // null) as $cn
          | ($in.logs[$pn] // null) as $log
          | if $pod.status.phase != "Running" then "unknown: bridge pod \($pn) is \($pod.status.phase // "Pending")"
            elif $log == null then "unknown: the log of \($pn) was not read"
            elif ($log | gpu_lines | length) == 0 then "unknown: \($pn) has printed no nvidia-smi -L line yet"
            else
              [ (if ($log | gpu_lines | length) != 1 then "violation: \($pn) requested one nvidia.com/gpu and saw \($log | gpu_lines | length) GPUs" else empty end),
                (if $side.side == "dra" then
                   (if any($dra[]; . == $node) | not then "violation: \($pn) runs on \($node), not a DRA node of this wave" else empty end),
                   (if $cn == null then "violation: \($pn) on DRA node \($node) got no claim from the bridge class (pod.status.extendedResourceClaimStatus is empty)"
                    else claim_result($in; $b.namespace; $cn) as $cr
                    | if $cr == null or $cr.result == null then "violation: bridge claim \($b.namespace)/\($cn) of \($pn) is not allocated by \($data.driver)"
                      else device_uuid($in; $cr.result.pool; $cr.result.device) as $uuid
                      | if ($log | uuids | index($uuid)) == null then "violation: \($pn) saw \($log | uuids | join(", ")); its bridge claim holds uuid \($uuid)" else empty end
                      end
                    end)
                 else
                   (if any($legacy[]; . == $node) | not then "violation: \($pn) runs on \($node), not a legacy node of this wave" else empty end),
                   (if $cn != null then "violation: \($pn) on legacy node \($node) was served by the DRA bridge (claim \($cn)), not the device plugin" else empty end)
                 end) ] as $f
              | $f[],
                (if ($f | length) > 0 then empty
                 else "proof: \($side.side) side: \($pn) on \($node) saw exactly one GPU (\($log | uuids | join(", ")))"
                   + (if $cn == null then ", served by the device plugin" else " through bridge claim \($b.namespace)/\($cn)" end),
                   "act: release \($b.namespace) \($pod.metadata.name) \($cn // "-")"
                 end)
            end
          end ] as $lines
    | if any($lines[]; startswith("violation: ") or startswith("unknown: ")) then $lines[] | select(startswith("act: ") | not)
      else $lines[] end
  );
""",
)
