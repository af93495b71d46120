"""The `early-bridge` evidence check: judged on a snapshot, it has no Job."""

from __future__ import annotations

from gpuplatform.gates.gate import CLASSES, PODS, Gate, always
from gpuplatform.labels import GPU_RESOURCE

GATE = Gate(
    id="early-bridge",
    title=(
        "no DeviceClass serves nvidia.com/gpu and no pod holds it through a bridge claim before a "
        "compatibility-bridge wave enables a bridge"
    ),
    job=False,
    reads=(PODS, CLASSES),
    data=("bridgeAllowed",),
    applies=always,
    program=r"""
def gate_early_bridge:
  . as $in
  | if $data.bridgeAllowed then
      "proof: this wave is at or after compatibility-bridge and enables a bridge: a bridge may serve @GPU_RESOURCE@"
    else need($in; ["pods", "deviceclasses"]) // (
      [ ($in.deviceclasses[] | select(.spec.extendedResourceName == "@GPU_RESOURCE@")
          | "violation: DeviceClass \(.metadata.name) serves @GPU_RESOURCE@ (spec.extendedResourceName) before a compatibility-bridge wave enables a bridge"),
        ($in.pods[] | select(live and .status.extendedResourceClaimStatus.resourceClaimName != null
            and any(pod_containers[] | (.resources.limits // {}), (.resources.requests // {}); has("@GPU_RESOURCE@")))
          | "violation: pod \(nsname) on node \(.spec.nodeName // "<none>") holds @GPU_RESOURCE@ through bridge claim \(.status.extendedResourceClaimStatus.resourceClaimName) before a compatibility-bridge wave enables a bridge") ] as $v
      | $v[],
        (if ($v | length) > 0 then empty
         else "proof: no DeviceClass serves @GPU_RESOURCE@ and no pod holds it through a bridge claim" end))
    end;
""".replace("@GPU_RESOURCE@", GPU_RESOURCE),
)
