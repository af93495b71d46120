"""The `kueue-admission` evidence check: judged on a snapshot, it has no Job."""

from __future__ import annotations

from gpuplatform.gates.gate import CLUSTER_QUEUES, KUEUE_WORKLOADS, Gate

GATE = Gate(
    id="kueue-admission",
    title=(
        "no Kueue workload of a migrated namespace waits for a GPU resource its ClusterQueue does "
        "not cover, and every such ClusterQueue is active"
    ),
    job=False,
    reads=(KUEUE_WORKLOADS, CLUSTER_QUEUES),
    data=("kueue",),
    applies=lambda plan, state: plan.platform.kueue is not None,
    program=r"""
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
""",
)
