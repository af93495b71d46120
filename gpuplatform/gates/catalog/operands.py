"""The `operands` gate: a Job of every wave it applies to."""

from __future__ import annotations

from gpuplatform.gates.gate import NODES, PODS, POOLS, Gate, driver_and_dra

GATE = Gate(
    id="operands",
    title=(
        "the GPU Operator's operands are Ready on every DRA node that schedules them; the DRA "
        "driver controller is Ready where the release renders it"
    ),
    job=True,
    reads=(NODES, PODS),
    data=(*POOLS, "operands", "operatorNamespace", "driverNamespace", "driverController"),
    applies=driver_and_dra,
    program=r"""
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
""",
)
