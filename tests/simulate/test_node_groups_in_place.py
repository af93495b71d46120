"""A cloud's node group moved by its hand-off: the cloud applies the group's labels to its running
nodes in place (GKE "Update Kubernetes node labels and taints for node pools"), as the rehearsal's
GKE does, so the model relabels them, one allocator leaving before the other starts."""

from __future__ import annotations

from pathlib import Path

from gpuplatform.load.stacks import load_stack
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.tree import render_tree
from gpuplatform.simulate.devices import DeviceMatcher
from gpuplatform.simulate.replay import Replayer, declared_modes

GKE_TAKEOVER = Path(__file__).resolve().parents[1] / "rehearse" / "stacks" / "gke-takeover.yaml"


def test_a_gke_group_is_relabelled_in_place_the_plugin_label_last_and_first() -> None:
    [loaded] = load_stack(GKE_TAKEOVER)
    plan = plan_platform(loaded.platform)
    tree = render_tree(plan)
    replayer = Replayer(plan, tree, "flux", DeviceMatcher(loaded.platform), declared_modes(plan, tree))
    replayer.bootstrap()
    for a, b in (("baseline", "pilot"), ("pilot", "validate")):
        replayer.transition(a, b)
    start = len(replayer.world.trace)
    replayer.transition("validate", "scale")
    middle = len(replayer.world.trace)
    replayer.transition("scale", "validate")
    forward = [s.text for s in replayer.world.trace[start:middle] if s.actor in ("operator", "provisioner")]
    back = [s.text for s in replayer.world.trace[middle:] if s.actor in ("operator", "provisioner")]
    provisioner = [s.text for s in replayer.world.trace[start:] if s.actor == "provisioner"]
    assert not provisioner, "the group's nodes stay, relabelled"
    relabel = next(i for i, t in enumerate(forward) if t.startswith("labels and taints l4/"))
    plugin = next(
        i for i, t in enumerate(forward) if t.startswith("sets nvidia.com/dra-kubelet-plugin on l4/")
    )
    assert relabel < plugin
    first = next(
        i for i, t in enumerate(back) if t.startswith("removes nvidia.com/dra-kubelet-plugin from l4/")
    )
    rest = next(i for i, t in enumerate(back) if t.startswith("labels and taints l4/"))
    assert first < rest
