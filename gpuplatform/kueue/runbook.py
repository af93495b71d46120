"""The Kueue owner's step when a transition changes the Configuration hand-off.

Kueue reads its Configuration (ConfigMap `kueue-manager-config`) once, when the manager starts
(kubernetes-sigs/kueue cmd/kueue/main.go: `--config` "load its initial configuration from this
file", `apply(configFile)` before the manager runs), so its owner applies the wave's
`deviceClassMappings` and DRA gate and restarts `kueue-controller-manager`. Mappings that grow are
applied before the merge (a converted Job whose class is not mapped yet would be inadmissible);
mappings that shrink, going back, after the sync (the Jobs still claiming the classes are back on
`nvidia.com/gpu` by then).
"""

from __future__ import annotations

from typing import Any

from gpuplatform.kueue.render import kueue_configuration_handoff
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.meta import file_name
from gpuplatform.render.runbook_actions import Action, Steps

__all__ = ["KUEUE_OWNER", "kueue_steps"]

#: How the owner's step starts (the rehearsal's owner acts on it: rehearse/kueue.py `configure_kueue`).
KUEUE_OWNER = "Kueue's owner"


def _setting(handoff: dict[str, Any] | None) -> tuple[dict[str, Any], set[str]]:
    """The hand-off's gates and its mapped classes (nothing for no hand-off)."""
    if handoff is None:
        return {}, set()
    spec = handoff["spec"]
    classes = {c for m in spec["resources"]["deviceClassMappings"] for c in m["deviceClassNames"]}
    return dict(spec["featureGates"]), classes


def kueue_steps(plan: Plan, a: WaveState, b: WaveState) -> Steps:
    """The Kueue owner's step of the transition from `a` to `b` (none when the hand-off is the same)."""
    steps = Steps()
    kueue = plan.platform.kueue
    if kueue is None:
        return steps
    before, after = kueue_configuration_handoff(plan, a), kueue_configuration_handoff(plan, b)
    (gates_a, classes_a), (gates_b, classes_b) = _setting(before), _setting(after)
    if (gates_a, classes_a) == (gates_b, classes_b):
        return steps
    ns = kueue.namespace
    restart = (
        f"kubectl -n {ns} get configmap kueue-manager-config -o yaml > kueue-manager-config.before.yaml",
        f"kubectl -n {ns} rollout restart deployment/kueue-controller-manager",
        f"kubectl -n {ns} rollout status deployment/kueue-controller-manager --timeout=10m",
    )
    if after is not None:
        path = f"handoff/{b.dir_name}/{file_name(after)}"
        text = (
            f"{KUEUE_OWNER} sets `resources.deviceClassMappings` and `featureGates` of ConfigMap "
            f"`{ns}/kueue-manager-config` as `{path}` says (mapped: {', '.join(sorted(classes_b))}), then restarts "
            "Kueue, which reads its Configuration only when it starts:"
        )
    else:
        text = (
            f"{KUEUE_OWNER} removes the `deviceClassMappings` entry of {', '.join(sorted(classes_a))} from ConfigMap "
            f"`{ns}/kueue-manager-config` (no tier is served in `{b.name}`), then restarts Kueue:"
        )
    action = Action(text, restart)
    if classes_b - classes_a or (gates_b and not gates_a):
        steps.before.append(action)
    else:
        steps.after.append(action)
    return steps
