"""The `inventory` gate: a Job of every wave it applies to."""

from __future__ import annotations

from gpuplatform.gates.gate import CLASSES, NODES, POOLS, SLICES, Gate, driver_and_dra

GATE = Gate(
    id="inventory",
    title=(
        "every DRA node publishes the devices its pool declares (count, product, memory); every "
        "tier's DeviceClass exists"
    ),
    job=True,
    reads=(NODES, SLICES, CLASSES),
    data=(*POOLS, "inventory", "deviceClasses"),
    applies=driver_and_dra,
    program=r"""
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
""",
)
