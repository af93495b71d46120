"""The gates' jq programs: the prelude they share, and each gate's program (`gates/catalog/`) over it.

A program runs in the gate Job on what kubectl read, and offline on a snapshot. It reads one object — `nodes`, `pods`, `resourceslices`, `resourceclaims`, `deviceclasses`
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

from gpuplatform.gates.catalog import ALL
from gpuplatform.gates.matchers import (
    DEVICE_PLUGIN_IMAGE,
    DEVICE_PLUGIN_SOCKETS,
    DRA_CONTROLLER_COMPONENT,
    DRA_KUBELET_PLUGIN_SUFFIX,
    GPU_STACK_DAEMONSET_PREFIXES,
    NO_GPU_VISIBLE_DEVICES,
    VISIBLE_DEVICES,
)
from gpuplatform.labels import NVIDIA_RESOURCE_PREFIX

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

PROGRAMS: dict[str, str] = {gate.id: gate.program for gate in ALL}
"""Every gate's program (`gates/catalog/`) by its id."""


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
