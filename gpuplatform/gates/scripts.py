"""The in-cluster half of each gate: a POSIX sh check using only kubectl and jq.

Each script defines `check`, which prints one line per violation and fails when there is any;
post-transition gates retry it until it holds or their timeout passes.
"""

from __future__ import annotations

from gpuplatform.gates.matchers import (
    DEVICE_PLUGIN_LABEL,
    DRA_DRIVER,
    DRA_KUBELET_PLUGIN_SUFFIX,
    GPU_RESOURCE,
)

__all__ = ["allocator_exclusivity", "claim_pilot", "inventory", "rollback_safety", "wrap"]


def _quote(value: str) -> str:
    return "'" + value.replace("'", "'\"'\"'") + "'"


def wrap(gate_id: str, variables: dict[str, str], body: str, timeout: int) -> str:
    """The full script: variables, the check, and the retry loop (timeout 0 = check once)."""
    lines = ["set -eu", *[f"{k}={_quote(v)}" for k, v in sorted(variables.items())], body.strip(), ""]
    lines.append(f"deadline=$(( $(date +%s) + {timeout} ))")
    lines.append(
        "while :; do\n"
        f'  if out=$(check 2>&1); then echo "gate {gate_id} holds"; exit 0; fi\n'
        '  if [ "$(date +%s)" -ge "$deadline" ]; then echo "$out" >&2; '
        f'echo "gate {gate_id} is broken" >&2; exit 1; fi\n'
        "  sleep 10\n"
        "done"
    )
    return "\n".join(lines) + "\n"


def rollback_safety() -> str:
    """No ResourceClaim allocated on a node this wave declares legacy (pool name = node name)."""
    return """
check() {
  rc=0
  claims=$(kubectl get resourceclaims -A -o json)
  for node in $LEGACY_NODES; do
    held=$(printf '%s' "$claims" | jq -r --arg n "$node" '.items[] | select(.status.allocation != null)
      | select(([.status.allocation.devices.results[]?.pool] | index($n)) != null
        or ([.status.allocation.nodeSelector.nodeSelectorTerms[]?.matchFields[]? | select(.key == "metadata.name") | .values[]] | index($n)) != null)
      | "\\(.metadata.namespace)/\\(.metadata.name)"')
    for claim in $held; do echo "claim $claim is allocated on legacy node $node"; rc=1; done
  done
  return $rc
}"""


def allocator_exclusivity() -> str:
    """Per DRA node: no device-plugin pod, no `nvidia.com/gpu` allocatable (0 = absent), a kubelet plugin."""
    key, value = DEVICE_PLUGIN_LABEL
    return f"""
check() {{
  rc=0
  nodes=$(kubectl get nodes -o json)
  pods=$(kubectl get pods -A -o json)
  for node in $DRA_NODES; do
    found=$(printf '%s' "$nodes" | jq --arg n "$node" '[.items[] | select(.metadata.name == $n)] | length')
    if [ "$found" = 0 ]; then echo "node $node does not exist"; rc=1; continue; fi
    gpus=$(printf '%s' "$nodes" | jq -r --arg n "$node" '.items[] | select(.metadata.name == $n) | .status.allocatable["{GPU_RESOURCE}"] // "0"')
    if [ "$gpus" != 0 ]; then echo "node $node advertises {GPU_RESOURCE}=$gpus (device plugin still allocating)"; rc=1; fi
    plugin=$(printf '%s' "$pods" | jq --arg n "$node" '[.items[] | select(.spec.nodeName == $n and .metadata.labels["{key}"] == "{value}" and .status.phase != "Succeeded" and .status.phase != "Failed")] | length')
    if [ "$plugin" != 0 ]; then echo "node $node runs a device-plugin pod"; rc=1; fi
    dra=$(printf '%s' "$pods" | jq --arg n "$node" --arg ns "$DRA_NAMESPACE" '[.items[] | select(.spec.nodeName == $n and .metadata.namespace == $ns and .status.phase == "Running")
      | select([.metadata.ownerReferences[]? | select(.kind == "DaemonSet" and (.name | endswith("{DRA_KUBELET_PLUGIN_SUFFIX}")))] | length > 0)] | length')
    if [ "$dra" = 0 ]; then echo "node $node runs no DRA kubelet plugin"; rc=1; fi
  done
  return $rc
}}"""


def inventory() -> str:
    """At least one ResourceSlice per DRA node and every tier's DeviceClass present."""
    return f"""
check() {{
  rc=0
  slices=$(kubectl get resourceslices -o json)
  for node in $DRA_NODES; do
    n=$(printf '%s' "$slices" | jq --arg n "$node" '[.items[] | select(.spec.driver == "{DRA_DRIVER}" and .spec.nodeName == $n)] | length')
    if [ "$n" = 0 ]; then echo "node $node publishes no {DRA_DRIVER} ResourceSlice"; rc=1; fi
  done
  for class in $DEVICE_CLASSES; do
    kubectl get deviceclass "$class" >/dev/null 2>&1 || {{ echo "DeviceClass $class is missing"; rc=1; }}
  done
  return $rc
}}"""


def claim_pilot() -> str:
    """The validation claim is allocated on a DRA node and the container saw that device's UUID."""
    return """
check() {
  pod=$(kubectl get pods -n "$NAMESPACE" -l "job-name=$JOB" -o json | jq -r '[.items[] | select(.status.phase == "Succeeded")][0].metadata.name // empty')
  if [ -z "$pod" ]; then echo "no succeeded pod of Job $NAMESPACE/$JOB"; return 1; fi
  claim=$(kubectl get pod -n "$NAMESPACE" "$pod" -o json | jq -r '.status.resourceClaimStatuses[]? | select(.name == "gpu") | .resourceClaimName // empty')
  if [ -z "$claim" ]; then echo "pod $pod has no generated claim"; return 1; fi
  result=$(kubectl get resourceclaim -n "$NAMESPACE" "$claim" -o json | jq -r '.status.allocation.devices.results[0] // empty | "\\(.pool) \\(.device)"')
  if [ -z "$result" ]; then echo "claim $claim is not allocated"; return 1; fi
  pool=${result% *}; device=${result#* }
  case " $DRA_NODES " in *" $pool "*) ;; *) echo "claim $claim is allocated on $pool, not a DRA node"; return 1;; esac
  uuid=$(kubectl get resourceslices -o json | jq -r --arg p "$pool" --arg d "$device" '.items[] | select(.spec.pool.name == $p) | .spec.devices[]? | select(.name == $d) | .attributes.uuid.string // empty')
  if [ -z "$uuid" ]; then echo "device $pool/$device has no uuid in its ResourceSlice"; return 1; fi
  if ! kubectl logs -n "$NAMESPACE" "$pod" | grep -q "UUID: $uuid)"; then echo "container of $pod did not see $uuid"; return 1; fi
}"""
