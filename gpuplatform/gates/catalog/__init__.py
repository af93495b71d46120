"""Every gate, one module each: a module of this package that defines `GATE` is a gate, and
nothing else lists them. Job gates and evidence checks are each in the order of their ids."""

from __future__ import annotations

import importlib
import pkgutil

from gpuplatform.gates.gate import CLAIMS, PODS, Gate, always

__all__ = ["ALL", "EVIDENCE_CHECKS", "GATES"]


def _found() -> list[Gate]:
    gates = []
    for module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        gate = getattr(importlib.import_module(f"{__name__}.{module.name}"), "GATE", None)
        if not isinstance(gate, Gate):
            raise TypeError(f"gpuplatform/gates/catalog/{module.name}.py defines no GATE of type Gate")
        gates.append(gate)
    return gates


_CLEANUP = Gate(
    id="cleanup",
    title="no claim stays reserved for, or allocated to, a pod that finished or no longer exists",
    job=False,
    reads=(PODS, CLAIMS),
    data=(),
    applies=always,
    program=r"""
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
""",
)

#: Every gate, in the order of their ids.
ALL: tuple[Gate, ...] = tuple(sorted([*_found(), _CLEANUP], key=lambda g: g.id))
#: The gates that run as Jobs of their waves.
GATES: tuple[Gate, ...] = tuple(g for g in ALL if g.job)
#: Evidence with no Job of its own: `gpuplatform evidence` checks these against a snapshot.
EVIDENCE_CHECKS: tuple[Gate, ...] = tuple(g for g in ALL if not g.job)
