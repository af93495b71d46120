"""The step sequence a reviewer and an operator read: the plan's, cut to what the rendered files change.

`plan.steps.transition_steps` derives the sync steps from the two wave states; the rendered tree is
the truth of what the engine applies. `reviewed_steps` keeps the manual steps and the merge as they
are, keeps a sync step only when its unit's folder holds a changed file (a Karpenter pool that moves
has no Node objects, so its `10-nodes` step goes), keeps the hook units (gates, the allocator
switch: their Jobs carry a digest of the wave and run again on every transition), and adds a step
for a unit whose files change although the states do not say so (a drain wave's quotas).
`plan --from/--to` and the runbooks both read this cut, so they tell one story.
"""

from __future__ import annotations

from collections.abc import Set

from gpuplatform.plan.steps import Step
from gpuplatform.plan.sync_order import SYNC_UNITS

__all__ = ["RERUN_UNITS", "reviewed_steps"]

#: Units whose Jobs the engine runs again on every transition, whether their content changes or not.
RERUN_UNITS = frozenset(u.id for u in SYNC_UNITS if u.argo_hook)


def reviewed_steps(steps: tuple[Step, ...], changed_units: Set[str]) -> tuple[Step, ...]:
    """`steps` (a transition's sequence) with the sync steps of `changed_units` and the hook units."""
    if not steps:
        return steps
    merge = next((i for i, s in enumerate(steps) if s.kind == "merge"), len(steps))
    keep = changed_units | RERUN_UNITS
    syncs = {s.action: s for s in steps if s.kind == "sync" and s.action in keep}
    for u in SYNC_UNITS:
        if u.id in changed_units and u.id not in syncs:
            syncs[u.id] = Step(
                "sync", u.id, f"{u.what}: its rendered files change (see `diff --waves`)", (), u.folder
            )
    rank = {u.id: i for i, u in enumerate(SYNC_UNITS)}
    later = [s for s in steps[merge + 1 :] if s.kind != "sync"]
    return (*steps[: merge + 1], *sorted(syncs.values(), key=lambda s: rank[s.action]), *later)
