"""The `allocator-exclusivity` gate: a Job of every wave it applies to."""

from __future__ import annotations

from gpuplatform.gates.gate import NODES, PODS, POOLS, SLICES, Gate

GATE = Gate(
    id="allocator-exclusivity",
    title=(
        "no node has both allocators; DRA nodes run a ready kubelet plugin and no device-plugin pod "
        "or nvidia.com/* resource; legacy nodes run no kubelet plugin, publish no devices and have "
        "a ready device plugin; no pod on a GPU node reaches GPUs through NVIDIA_VISIBLE_DEVICES "
        "with no request or claim (a third allocator)"
    ),
    job=True,
    reads=(NODES, PODS, SLICES),
    data=(
        *POOLS,
        "modeLabel",
        "driverNamespace",
        "operatorNamespace",
        "devicePluginLabel",
        "devicePluginEnabled",
    ),
    applies=lambda plan, state: state.driver_installed,
    program=r"""
def gate_allocator_exclusivity:
  . as $in
  | need($in; ["nodes", "pods", "resourceslices"]) // (
    found($in) as $fp | mode_nodes($in; $fp) as $declared
    | ([$in.pods[] | select(live)] | by_node) as $pods_on
    | [$in.resourceslices[] | select(.spec.driver == $data.driver and ((.spec.kinds // []) | length) > 0) | .spec] as $published
    | ([$published[] | .nodeName // empty] | name_set) as $publishing
    | [$published[] | select(.nodeName == null)
       | if .perDeviceNodeSelection == true then (.deviceNodes // [])[] else . end] as $wide
    | coverage($fp),
      ($in.nodes[] | .metadata.name as $n | labels as $l | ($l[$data.modeLabel] // null) as $mode_label | $declared[$n] as $d
        | [($pods_on[$n] // [])[] | select(device_plugin_pod)] as $dp
        | [($pods_on[$n] // [])[] | select(kubelet_plugin_pod)] as $kp
        | dp_resources as $res
        | (.status.allocatable == null) as $blind
        | (($publishing[$n] // false) or any($wide[]; reaches($l; $n))) as $slices
        | (($dp | length) > 0 or ($res | length) > 0) as $plugin_side
        | (($kp | length) > 0 or $slices) as $dra_side
        | [
            (if $plugin_side and $dra_side then
              "violation: node \($n) has TWO ALLOCATORS: the device plugin (\(($res + [$dp[] | nsname]) | join(", "))) and the DRA driver (\(([$kp[] | nsname] + (if $slices then ["ResourceSlice devices"] else [] end)) | join(", ")))"
             elif $blind and ($dra_side or $d.mode == "dra") then
              "unknown: node \($n) reports no status.allocatable: whether the device plugin advertises a resource there cannot be judged"
             else empty end),
            (if $d == null then empty
             elif $d.mode == "dra" then
               (if $d.pool != null and $mode_label != "dra" then
                  "violation: node \($n) of pool \($d.pool) is DRA in this wave but carries \($data.modeLabel)=\($mode_label // "<absent>")"
                else empty end),
               ($dp[] | "violation: DRA node \($n) runs device-plugin pod \(nsname)"),
               ($res[] | "violation: DRA node \($n) advertises \(.) (the device plugin still allocates there)"),
               (if ($kp | length) == 0 then "violation: DRA node \($n) runs no DRA kubelet plugin"
                else ($kp[] | select(ready | not) | "violation: DRA kubelet plugin \(nsname) on \($n) is not ready (containers not ready: \(unready))")
                end)
             else
               (if $d.pool != null and $mode_label == "dra" then
                  "violation: node \($n) of pool \($d.pool) is legacy in this wave but carries \($data.modeLabel)=dra"
                else empty end),
               ($kp[] | "violation: legacy node \($n) runs DRA kubelet plugin pod \(nsname)"),
               (if $slices then "violation: legacy node \($n) publishes \($data.driver) devices in a ResourceSlice" else empty end),
               (if $data.devicePluginEnabled and ([$dp[] | select(ready and operator_device_plugin_pod)] | length) == 0 then
                  "violation: legacy node \($n) has no ready device-plugin pod of a DaemonSet in \($data.operatorNamespace)"
                else empty end)
             end),
            (if $d == null then empty
             else ($pods_on[$n] // [])[] | select(third_allocator_pod)
             | "violation: pod \(nsname) on \(if $d.mode == "dra" then "DRA" else "legacy" end) node \($n) reaches GPUs through NVIDIA_VISIBLE_DEVICES=\(visible_devices) with no allocator (no nvidia.com/* request, no resource claim): a third allocator"
             end)
          ] as $v
        | $v[],
          (if ($v | length) > 0 or $d == null then empty
           elif $d.mode == "dra" then "proof: DRA node \($n): kubelet plugin \([$kp[] | nsname] | join(", ")) ready, no device-plugin pod or resource"
           else "proof: legacy node \($n): no DRA kubelet plugin, no \($data.driver) devices" + (if $data.devicePluginEnabled then ", device plugin \([$dp[] | select(ready and operator_device_plugin_pod) | nsname] | join(", ")) ready" else "" end)
           end))
  );
""",
)
