"""Each gate's verdict as a jq program: run by the gate Job on what kubectl read, and offline on a snapshot.

A program reads one object — `nodes`, `pods`, `resourceslices`, `resourceclaims`, `deviceclasses`
(each a list, or null when it could not be read) and `logs` (`"<namespace>/<pod>"` -> text) — and
the wave's facts as `$data` (`render/gate_facts.py`). ResourceSlices are read `summarised`: each one's
devices summed up by kind (`evidence/summary.py`). It prints one line per finding:

- `violation: …` the invariant is broken;
- `unknown: …` it cannot be judged (a kind is missing, a pool has fewer nodes than it must,
  the validation pod has not run yet): never counts as held;
- `proof: …` the object that proves the invariant;
- `act: release <namespace> <pod> <claim|->` a validation pod the Job removes once proven.

The programs keep to jq 1.6 (no regular expressions), which the gate image and the offline
evaluator both provide.
"""

from __future__ import annotations

import json
import re
from functools import cache

from gpuplatform.gates.matchers import (
    DEVICE_PLUGIN_IMAGE,
    DEVICE_PLUGIN_SOCKETS,
    DRA_CONTROLLER_COMPONENT,
    DRA_KUBELET_PLUGIN_SUFFIX,
    GPU_STACK_DAEMONSET_PREFIXES,
    NO_GPU_VISIBLE_DEVICES,
    VISIBLE_DEVICES,
)
from gpuplatform.labels import GPU_RESOURCE, NVIDIA_RESOURCE_PREFIX

__all__ = ["PRELUDE", "PROGRAMS", "prelude_for", "program", "programs"]

_PRELUDE = r"""
def device_kinds:
  reduce .[] as $d ({order: [], by: {}};
    [$d.attributes.type.string, $d.attributes.productName.string, $d.attributes.profile.string,
     $d.capacity.memory.value] as $kind
    | ($kind | tojson) as $key
    | (if .by[$key] == null then
         .order += [$key]
         | .by[$key] = {type: $kind[0], productName: $kind[1], profile: $kind[2], memory: $kind[3], names: [], uuids: []}
       else . end)
    | .by[$key].names += [$d.name] | .by[$key].uuids += [$d.attributes.uuid.string])
  | .by as $by | [.order[] | $by[.]];
def device_nodes:
  reduce (.[] | {nodeName, nodeSelector, allNodes} | with_entries(select(.value != null))) as $s
    ([]; if any(.[]; . == $s) then . else . + [$s] end);
def summarised:
  map(if (.spec | type) == "object" and (.spec.devices | type) == "array"
      then .spec |= (del(.devices) + {kinds: (.devices | device_kinds)}
                     + (if .perDeviceNodeSelection == true then {deviceNodes: (.devices | device_nodes)} else {} end))
      else . end);
def labels: .metadata.labels // {};
def nsname: if .metadata.namespace then "\(.metadata.namespace)/\(.metadata.name)" else .metadata.name end;
def live: (.status.phase // "") as $p | $p != "Succeeded" and $p != "Failed";
def ready: (.status.containerStatuses // []) as $s | ($s | length) > 0 and all($s[]; .ready == true);
def unready: [(.status.containerStatuses // [])[] | select(.ready != true) | .name] | join(",");
# a DCGM exporter in DRA mode: the env set to true, or the flag (NVIDIA/dcgm-exporter pkg/cmd/app.go)
def dra_mode($env): any((.spec.containers // [])[];
  any((.env // [])[]; .name == $env and ((.value // "") | ascii_downcase) == "true")
  or any(((.args // []) + (.command // []))[]; . == "--kubernetes-enable-dra" or . == "--kubernetes-enable-dra=true"));
def on($n): .spec.nodeName == $n;
def plugin_image: (split("@")[0] | split("/") | last // "") | split(":")[0] == "@PLUGIN_IMAGE@";
def device_plugin_pod:
  labels[$data.devicePluginLabel[0]] == $data.devicePluginLabel[1]
  or (any(.spec.volumes[]?; (.hostPath.path // "" | rtrimstr("/")) == "@PLUGIN_SOCKETS@")
      and any(.spec.containers[]?; (.image | type) == "string" and (.image | plugin_image)));
# a pod its DaemonSet's controller made (apps/v1 owner reference, controller: true), in namespace $ns:
# what the GPU stack's own pods are; a tenant cannot create a pod in the operator's or driver's namespace
def daemonset_pod($ns):
  .metadata.namespace == $ns
  and any(.metadata.ownerReferences[]?; .kind == "DaemonSet" and .apiVersion == "apps/v1" and .controller == true);
def operator_device_plugin_pod: device_plugin_pod and daemonset_pod($data.operatorNamespace);
def kubelet_plugin_pod:
  daemonset_pod($data.driverNamespace)
  and any(.metadata.ownerReferences[]?; .kind == "DaemonSet" and (.name | endswith("@KUBELET_PLUGIN@")));
def gpu_stack_pod:
  (daemonset_pod($data.operatorNamespace) or daemonset_pod($data.driverNamespace))
  and any(.metadata.ownerReferences[]?; .kind == "DaemonSet"
         and ((.name // "") as $o | any(@STACK_PREFIXES@[]; . as $p | $o | startswith($p)) or ($o | endswith("@KUBELET_PLUGIN@"))));
def pod_containers: (.spec.initContainers // []) + (.spec.containers // []);
def visible_devices:
  [pod_containers[] | (.env // [])[] | select(.name == "@VISIBLE@") | (.value // "")
   | select(ascii_downcase as $v | any(@NO_GPU@[]; . == $v) | not)][0];
def third_allocator_pod:
  visible_devices != null
  and ([pod_containers[] | (.resources.limits // {}), (.resources.requests // {}) | keys[]
        | select(startswith("@PLUGIN_RESOURCES@"))] | length) == 0
  and ((.spec.resourceClaims // []) | length) == 0
  and (gpu_stack_pod | not);
def dra_controller_pod:
  .metadata.namespace == $data.driverNamespace
  and any(labels | to_entries[]; (.key | endswith("@CONTROLLER_KEY@")) and .value == "@CONTROLLER_VALUE@");
def dp_resources:
  [(.status.allocatable // {}) | to_entries[]
   | select((.key | startswith("@PLUGIN_RESOURCES@")) and ((.value | tostring) != "0")) | "\(.key)=\(.value)"];
def int64:
  (if startswith("-") or startswith("+") then .[1:] else . end) as $d
  | if ($d | length) == 0 or any($d | explode[]; . < 48 or . > 57) then null
    else ($d | explode | until(length <= 1 or .[0] != 48; .[1:]) | implode) as $digits
    | startswith("-") as $neg
    | if ($digits | length) > 19
         or (($digits | length) == 19 and $digits > (if $neg then "9223372036854775808" else "9223372036854775807" end))
      then null
      else {neg: ($neg and $digits != "0"), digits: $digits} end
    end;
def int_lt($a; $b):
  def mag_lt($x; $y): ($x | length) < ($y | length) or (($x | length) == ($y | length) and $x < $y);
  if $a.neg != $b.neg then $a.neg
  elif $a.neg then mag_lt($b.digits; $a.digits)
  else mag_lt($a.digits; $b.digits) end;
def label_matches($l):
  .key as $k | (.values // []) as $vs | .operator as $op | ($l | has($k)) as $has
  | if $op == "In" then $has and any($vs[]; . == $l[$k])
    elif $op == "NotIn" then ($vs | length) > 0 and (($has | not) or all($vs[]; . != $l[$k]))
    elif $op == "Exists" then ($vs | length) == 0 and $has
    elif $op == "DoesNotExist" then ($vs | length) == 0 and ($has | not)
    elif ($op == "Gt" or $op == "Lt") and ($vs | length) == 1 and $has then
      ($vs[0] | int64) as $r | ($l[$k] | int64) as $v
      | $r != null and $v != null and (if $op == "Gt" then int_lt($r; $v) else int_lt($v; $r) end)
    else false end;
def field_matches($n):
  (.values // []) as $vs | (if .key == "metadata.name" then $n else "" end) as $f
  | ($vs | length) == 1
    and (if .operator == "In" then $vs[0] == $f elif .operator == "NotIn" then $vs[0] != $f else false end);
def selects($l; $n):
  any((.nodeSelectorTerms // [])[];
      ((.matchExpressions // []) | length) + ((.matchFields // []) | length) > 0
      and all((.matchExpressions // [])[]; label_matches($l))
      and all((.matchFields // [])[]; field_matches($n)));
def reaches($l; $n): .nodeName == $n or .allNodes == true or (.nodeSelector != null and (.nodeSelector | selects($l; $n)));
def bytes:
  . as $q
  | [["Ki", 1024], ["Mi", 1048576], ["Gi", 1073741824], ["Ti", 1099511627776],
     ["k", 1000], ["M", 1000000], ["G", 1000000000], ["T", 1000000000000]]
  | map(select(.[0] as $s | $q | endswith($s)))
  | if length > 0 then .[0] as $unit | ($q | rtrimstr($unit[0]) | tonumber) * $unit[1] else ($q | tonumber) end;
def need($in; $kinds):
  [$kinds[] | select($in[.] == null)] as $m
  | if ($m | length) > 0 then "unknown: \($m | join(", ")) could not be read" else empty end;
def entries_object: reduce .[] as $e ({}; . + {($e.key | if type == "string" then . else tojson end): $e.value});
def by_node: map(select(.spec.nodeName != null)) | group_by(.spec.nodeName)
  | map({key: .[0].spec.nodeName, value: .}) | entries_object;
def name_set: map({key: ., value: true}) | entries_object;
def holds($l): .key as $k | .values as $v
  | if .operator == "In" then ($l | has($k)) and ($v | index([$l[$k]]) != null)
    elif .operator == "NotIn" then ($l | has($k) | not) or ($v | index([$l[$k]]) == null)
    elif .operator == "Exists" then $l | has($k)
    else $l | has($k) | not end;
def found($in):
  ([$in.nodes[] | .metadata.name] | name_set) as $present
  | [$data.pools[] | . as $p
     | $p + {found: (if ($p.names | length) > 0 then [$p.names[] | select($present[.] // false)]
                     elif ($p.labels | length) > 0 then
                       ($p.labels | to_entries) as $want
                       | [$in.nodes[] | labels as $l | select(all($want[]; $l[.key] == .value))
                          | select(all(($p.expressions // [])[]; holds($l))) | .metadata.name]
                     else [] end)}];
def member($set): type == "string" and ($set[.] // false);
def absent: (.found | name_set) as $f | [.names[] | select(($f[.] // false) | not)];
def coverage($pools):
  $pools[] | select((.found | length) < .minNodes)
  | if (.names | length) > 0
    then "unknown: pool \(.name): node(s) \(absent | join(", ")) not in the cluster"
    else "unknown: pool \(.name) must have at least \(.minNodes) node(s) (\(.describe)); \(.found | length) found"
    end;
def mode_nodes($in; $fp):
  ([$in.nodes[] | (labels[$data.modeLabel] // "") as $m | select($m == "dra" or $m == "legacy")
    | {key: .metadata.name, value: {mode: $m, pool: null}}] | entries_object)
  + ([$fp[] | . as $p | .found[] | {key: ., value: {mode: $p.mode, pool: $p.name}}] | entries_object);
def dra_names($fp): [$fp[] | select(.mode == "dra") | .found[]];
def claim_nodes:
  if any((.status.allocation.devices.results // [])[]; .driver == $data.driver) then
    [(.status.allocation.devices.results // [])[] | select(.driver == $data.driver) | .pool]
    + [(.status.allocation.nodeSelector.nodeSelectorTerms // [])[] | (.matchFields // [])[]
       | select(.key == "metadata.name") | .values[]]
    | unique
  else [] end;
def has_claims: ((.spec.resourceClaims // []) | length) > 0 or .status.extendedResourceClaimStatus != null;
def held_resources:
  [pod_containers[] | (.resources.limits // {}), (.resources.requests // {}) | to_entries[]
   | select((.key | startswith("@PLUGIN_RESOURCES@")) and ((.value | tostring) != "0")) | .key] | unique;
def holds_gpu: (held_resources | length) > 0 or has_claims;
def job_pods($in; $ns; $job):
  [$in.pods[] | select(.metadata.namespace == $ns
    and ((labels["batch.kubernetes.io/job-name"] // labels["job-name"]) == $job))];
def current: ([.[] | select(.status.phase == "Running")] + [.[] | select(live)] + .)[0];
def uuids: [split("\n")[] | select(contains("(UUID: ")) | split("(UUID: ")[1] | split(")")[0]];
def gpu_lines: [split("\n")[] | select(startswith("GPU ") and contains(": "))];
def device_uuid($in; $pool; $device):
  [$in.resourceslices[] | select(.spec.driver == $data.driver and .spec.pool.name == $pool)
   | (.spec.kinds // [])[] | .uuids[(.names | indices($device))[]] // empty][0];
def claim_result($in; $ns; $name):
  ([$in.resourceclaims[] | select(.metadata.namespace == $ns and .metadata.name == $name)][0]) as $c
  | if $c == null then null
    else {claim: $c, result: ([($c.status.allocation.devices.results // [])[] | select(.driver == $data.driver)][0])}
    end;
"""

_ALLOCATOR_EXCLUSIVITY = r"""
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
"""

_INVENTORY = r"""
def kind_problems($p; $i; $bytes):
  (if $i.type == "mig" then $i.profiles[.profile // ""] else $i.memory end) as $range
  | (if $i.productName != null and .productName != $i.productName then
       "is \(.productName // "<no productName>"), pool \($p.name) declares \($i.productName)"
     else empty end),
    (if $i.type == "mig" and ($i.profiles | length) > 0 and $range == null then
       "is MIG profile \(.profile // "<none>"), not in pool \($p.name)'s layout"
     elif $range == null then empty
     elif .memory == null then "publishes no memory capacity"
     elif ($bytes[.memory] // (.memory | bytes)) as $b | $b < $range.low or $b > $range.high then
       "publishes memory \(.memory); the catalog's figure is \($range.describe)"
     else empty end);
def gate_inventory:
  . as $in
  | need($in; ["nodes", "resourceslices", "deviceclasses"]) // (
    found($in) as $fp
    | ([$in.resourceslices[] | select(.spec.driver == $data.driver)] | by_node) as $slices_on
    | [$fp[] | select(.mode == "dra") | . as $p | $data.inventory[$p.name] as $i | .found[] as $n
       | ($slices_on[$n] // []) as $s
       | ([$s[] | .spec.pool.generation // 0] | max) as $gen
       | [$s[] | select((.spec.pool.generation // 0) == $gen) | (.spec.kinds // [])[] | select(.type == $i.type)] as $kinds
       | {$p, $i, $n, published: ($s | length > 0), $kinds, count: ([$kinds[].names | length] | add // 0)}] as $nodes
    | ([$nodes[].kinds[].memory | strings] | unique
       | map({key: ., value: bytes}) | entries_object) as $bytes
    | coverage([$fp[] | select(.mode == "dra")]),
      ($nodes[] | .p as $p | .i as $i | .n as $n | .count as $count | .kinds as $kinds
        | if .published | not then "violation: node \($n) publishes no \($data.driver) ResourceSlice"
          else
            [ (if $count != $i.count then
                 "violation: node \($n) publishes \($count) \($i.type) device(s), pool \($p.name) declares \($i.count)"
               else empty end),
              ($kinds[] | [kind_problems($p; $i; $bytes)] as $problems
               | if ($problems | length) > 0 then .names[] as $dev | $problems[] | "violation: \($n)/\($dev) \(.)"
                 else empty end) ] as $v
            | $v[],
              (if ($v | length) > 0 then empty
               else "proof: node \($n): \($count) \($i.type) device(s)"
                 + (if $i.productName then ", \($i.productName)" else "" end)
                 + (if $i.memory then ", memory \([$kinds[].memory] | unique | join(", "))" else "" end)
               end)
          end),
      ($data.deviceClasses[] as $c
        | if any($in.deviceclasses[]; .metadata.name == $c) then "proof: DeviceClass \($c) exists"
          else "violation: DeviceClass \($c) is missing" end)
  );
"""

_OPERANDS = r"""
def gate_operands:
  . as $in
  | need($in; ["nodes", "pods"]) // (
    found($in) as $fp | [$in.pods[] | select(live)] as $pods | ($pods | by_node) as $pods_on
    | ($in.nodes | map({key: .metadata.name, value: labels}) | entries_object) as $labels_of
    | coverage([$fp[] | select(.mode == "dra")]),
      ($fp[] | select(.mode == "dra") | .found[] as $n
        | $labels_of[$n] as $node_labels
        | $data.operands[] as $o
        | select($node_labels[$o.deployLabel] == "true")
        | [($pods_on[$n] // [])[] | select(daemonset_pod($data.operatorNamespace)
            and labels[$o.label[0]] == $o.label[1])] as $op
        | if ($op | length) == 0 then
            "violation: DRA node \($n) runs no \($o.name) pod (\($o.label | join("="))) although it carries \($o.deployLabel)=true"
          elif any($op[]; ready) | not then "violation: \($o.name) pod \($op[0] | nsname) on DRA node \($n) is not ready (containers not ready: \($op[0] | unready))"
          elif $o.draEnv != null and (any($op[]; ready and dra_mode($o.draEnv)) | not) then
            "violation: \($o.name) pod \([$op[] | select(ready) | nsname][0]) on DRA node \($n) runs without \($o.draEnv)=true: the metrics of DRA-allocated GPUs lose their pod"
          else "proof: DRA node \($n): \($o.name) \([$op[] | select(ready) | nsname][0]) ready"
          end),
      (if $data.driverController then
         [$pods[] | select(dra_controller_pod)] as $c
         | if any($c[]; ready) then "proof: DRA driver controller \([$c[] | select(ready) | nsname][0]) ready"
           elif ($c | length) == 0 then "violation: the DRA driver controller runs no pod in \($data.driverNamespace)"
           else "violation: DRA driver controller \($c[0] | nsname) is not ready (containers not ready: \($c[0] | unready))"
           end
       else empty end)
  );
"""

_ROLLBACK_SAFETY = r"""
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
"""

_CLAIM_PILOT = r"""
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
"""

_BRIDGE = r"""
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
"""

_EARLY_BRIDGE = r"""
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
"""

_CLAIM_PLACEMENT = r"""
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
"""

_CLEANUP = r"""
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
"""

_DRAINED = r"""
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
"""

_SPEC_NODES_EXIST = r"""
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
"""

PRELUDE = (
    _PRELUDE.replace("@KUBELET_PLUGIN@", DRA_KUBELET_PLUGIN_SUFFIX)
    .replace("@CONTROLLER_KEY@", DRA_CONTROLLER_COMPONENT[0])
    .replace("@CONTROLLER_VALUE@", DRA_CONTROLLER_COMPONENT[1])
    .replace("@PLUGIN_RESOURCES@", NVIDIA_RESOURCE_PREFIX)
    .replace("@PLUGIN_IMAGE@", DEVICE_PLUGIN_IMAGE)
    .replace("@PLUGIN_SOCKETS@", DEVICE_PLUGIN_SOCKETS)
    .replace("@STACK_PREFIXES@", json.dumps(list(GPU_STACK_DAEMONSET_PREFIXES)))
    .replace("@NO_GPU@", json.dumps(list(NO_GPU_VISIBLE_DEVICES)))
    .replace("@VISIBLE@", VISIBLE_DEVICES)
)

_KUEUE_ADMISSION = r"""
def gate_kueue_admission:
  . as $in
  | if ($data.kueue.namespaces | length) == 0 then
      "proof: no namespace admits GPU work through a Kueue queue with a DRA pool in this wave"
    else need($in; ["workloads", "clusterqueues"]) // (
    ($in.clusterqueues | map({key: .metadata.name, value: .}) | from_entries) as $cqs
    | def held($t): any((.status.conditions // [])[]; .type == $t and .status == "True");
      def asks: [(.spec.podSets // [])[].template.spec
          | (((.containers // []) + (.initContainers // []))[] | (.resources.requests // {}) | keys[]),
            (if ((.resourceClaims // []) | length) > 0 then $data.kueue.resource else empty end)]
        | unique | map(select(. as $r | $data.kueue.gpuResources | index($r)));
      [$in.workloads[] | select(.metadata.namespace as $ns | $data.kueue.namespaces | has($ns))] as $wls
    | [ ($data.kueue.namespaces | to_entries[] | .key as $ns | .value as $q
          | if $cqs[$q] == null then "violation: ClusterQueue \($q) of migrated namespace \($ns) does not exist"
            elif any(($cqs[$q].status.conditions // [])[]; .type == "Active" and .status == "False")
            then "violation: ClusterQueue \($q) of migrated namespace \($ns) is inactive: \([($cqs[$q].status.conditions // [])[] | select(.type == "Active") | .message // ""] | join(""))"
            else empty end),
        ($wls[] | select((held("Admitted") or held("Finished")) | not) | . as $w
          | $cqs[$data.kueue.namespaces[$w.metadata.namespace]] as $cq | select($cq != null)
          | [($cq.spec.resourceGroups // [])[].coveredResources[]] as $covered
          | ($w | asks)[] | select(. as $r | $covered | index($r) | not)
          | "violation: Workload \($w | nsname) is pending for \(.), which no flavor of ClusterQueue \($cq.metadata.name) covers") ] as $v
    | $v[],
      (if ($v | length) > 0 then empty
       else "proof: \($wls | length) Kueue workload(s) in migrated namespaces; their ClusterQueues exist, are active and cover every GPU resource asked for" end))
    end;
"""

PROGRAMS: dict[str, str] = {
    "allocator-exclusivity": _ALLOCATOR_EXCLUSIVITY,
    "inventory": _INVENTORY,
    "operands": _OPERANDS,
    "rollback-safety": _ROLLBACK_SAFETY,
    "claim-pilot": _CLAIM_PILOT,
    "bridge": _BRIDGE,
    "early-bridge": _EARLY_BRIDGE.replace("@GPU_RESOURCE@", GPU_RESOURCE),
    "claim-placement": _CLAIM_PLACEMENT,
    "cleanup": _CLEANUP,
    "spec-nodes-exist": _SPEC_NODES_EXIST,
    "drained": _DRAINED.replace("@PLUGIN_RESOURCES@", NVIDIA_RESOURCE_PREFIX),
    "kueue-admission": _KUEUE_ADMISSION,
}


def _definitions(prelude: str) -> dict[str, str]:
    """The prelude's `def name…;` blocks by name, in order."""
    blocks = re.split(r"\n(?=def )", prelude.strip())
    return {block.split()[1].split("(")[0].rstrip(":"): block for block in blocks}


_DEFINITIONS = _definitions(PRELUDE)


@cache
def prelude_for(text: str, defined: frozenset[str] = frozenset()) -> str:
    """The prelude definitions `text` uses, directly or through each other, in prelude order,
    but those `defined` around it (memoised: every wave's gate scripts use the same few texts)."""
    needed: set[str] = set(defined)
    pending = [text]
    while pending:
        body = pending.pop()
        for name, block in _DEFINITIONS.items():
            if name not in needed and re.search(rf"(?<![\w$.]){name}\b", body):
                needed.add(name)
                pending.append(block)
    return "".join(f"{block}\n" for name, block in _DEFINITIONS.items() if name in needed - defined)


def program(gate_id: str, source: str = ".", defined: frozenset[str] = frozenset()) -> str:
    """The jq program of a gate: the prelude it uses (but `defined`), its definition, applied to `source`."""
    body = PROGRAMS[gate_id] + f"{source} | gate_{gate_id.replace('-', '_')}\n"
    return prelude_for(body, defined) + body


_FOUND = frozenset({"found"})


def programs(gates: list[tuple[str, tuple[str, ...]]]) -> str:
    """One jq program printing, per (gate, kinds it reads), the list of that gate's lines.

    Each gate sees only its kinds and `logs`, and `$datas[i]` as its `$data`: the same verdicts as
    running each program alone, with the input parsed once. The gates are one wave's: the pools'
    nodes (`found`), which each gate that reads them computes alike from the same nodes and the
    wave's `$data.pools`, are computed once (when the nodes were read; a gate without them never
    asks) and every gate's `found` gives them.
    """
    runs = []
    finders = [i for i, (gate_id, _) in enumerate(gates) if "found(" in PROGRAMS[gate_id]]
    shared = frozenset() if not finders else _FOUND
    for i, (gate_id, kinds) in enumerate(gates):
        document = ", ".join(f"{kind}: .{kind}" for kind in (*kinds, "logs"))
        runs.append(f"[$datas[{i}] as $data | {{{document}}} | {program(gate_id, defined=shared)}]")
    if not finders:
        return ",\n".join(runs)
    found = prelude_for("found($in)")
    return (
        f"(. as $in | $datas[{finders[0]}] as $data | if .nodes == null then null else\n{found}found($in) end)"
        " as $found_pools\n| def found($in): $found_pools;\n" + ",\n".join(runs)
    )
