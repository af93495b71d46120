"""A validation probe's node affinity is read as the scheduler reads it: every term, ORed.

The bridge probe of each side asks for `nvidia.com/gpu: 1` with one node selector term per pool of
that side (`render/validation.py`). The scheduler places it on a node of any term's pool
(k8s.io/component-helpers scheduling/corev1/nodeaffinity: terms are ORed), so a probe pinned to the
first term's pool alone would wait where the cluster runs it: on a pool that is cordoned, or that
cannot take it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from gpuplatform.kube.nodes import GroupSelector, Node, node_selector_matches
from gpuplatform.load.stacks import load_stack
from gpuplatform.plan.waves import plan_platform
from gpuplatform.simulate.jobs import run_job
from gpuplatform.simulate.wave_cluster import wave_world
from gpuplatform.simulate.world import World
from tests.simulate.helpers import sim_spec
from tests.specs import write_spec


def _bridge_world(tmp_path: Path) -> World:
    """The bridge wave of a lab with two legacy pools (`mig` first) and one DRA pool."""
    doc: dict[str, Any] = sim_spec()
    mig = {"name": "mig", "nodes": ["gpu-00"], "product": "A100-40GB", "gpusPerNode": 4}
    doc["spec"]["nodePools"].insert(0, mig | {"migLayout": ["3g.20gb"] * 2})
    doc["spec"]["bridges"] = [{"name": "b"}]
    doc["spec"]["waves"].insert(3, {"name": "bridge", "stage": "compatibility-bridge", "bridges": ["b"]})
    (loaded,) = load_stack(write_spec(tmp_path / "lab.yaml", doc))
    world = wave_world(plan_platform(loaded.platform), "bridge")
    assert world is not None
    return world


def _legacy_probe(world: World) -> Any:
    (probe,) = [w for w in world.cluster.workloads if w.probe == "bridge-legacy"]
    return probe


def test_the_legacy_probe_may_land_on_every_legacy_pool_its_terms_name(tmp_path: Path) -> None:
    world = _bridge_world(tmp_path)
    probe = _legacy_probe(world)
    assert probe.pools == ("mig", "old") and probe.phase == "running"


def test_with_the_first_terms_pool_cordoned_the_probe_runs_on_the_next(tmp_path: Path) -> None:
    # GIVEN the bridge wave's cluster, the `mig` pool's node cordoned
    world = _bridge_world(tmp_path)
    probe = _legacy_probe(world)
    job = world.cluster.probes[probe.key]
    (mig,) = [g for g in world.cluster.groups if g.pool == "mig"]
    mig.cordoned = True
    # WHEN the probe's Job runs again
    assert run_job(world, job) == []
    # THEN the scheduler places it on the other legacy pool its affinity names
    probe = _legacy_probe(world)
    (group,) = [g for g in world.cluster.groups if g.id == probe.group]
    assert probe.phase == "running" and group.pool == "old"


def test_a_probe_whose_terms_name_no_node_never_runs(tmp_path: Path) -> None:
    world = _bridge_world(tmp_path)
    job = world.cluster.probes[_legacy_probe(world).key]
    pod = job["spec"]["template"]["spec"]
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    terms[:] = [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-99"]}]}]
    (found,) = run_job(world, job)
    assert "did not run" in found


_NAMES = st.sampled_from(["gpu-0", "gpu-1", "gpu-2", "gpu-9"])
_REQUIREMENT = st.fixed_dictionaries(
    {
        "key": st.sampled_from(["metadata.name", "metadata.name", "pool", "mode"]),
        "operator": st.sampled_from(["In", "In", "NotIn", "Exists", "DoesNotExist", "Gt"]),
        "values": st.lists(st.one_of(_NAMES, _NAMES, st.sampled_from(["a", "b", "3"])), max_size=3),
    }
)
_TERM = st.fixed_dictionaries(
    {},
    optional={
        "matchExpressions": st.lists(_REQUIREMENT, max_size=2),
        "matchFields": st.lists(_REQUIREMENT, max_size=2),
    },
)


@settings(max_examples=500, deadline=None)  # cheap: many examples are what finds a wrong shortcut
@example(  # the name the term lists first is not in the group, the second is
    terms=[{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-9", "gpu-0"]}]}],
    names=["gpu-0"],
    labels={},
)
@example(  # a name the term excludes comes first in the group, another is selected
    terms=[{"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["gpu-0"]}]}],
    names=["gpu-0", "gpu-1"],
    labels={},
)
@example(  # two names the term lists are in the group, its second requirement excludes the first
    terms=[
        {
            "matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["gpu-0", "gpu-1"]},
                {"key": "metadata.name", "operator": "NotIn", "values": ["gpu-0"]},
            ]
        }
    ],
    names=["gpu-0", "gpu-1"],
    labels={},
)
@given(
    terms=st.lists(_TERM, max_size=3),
    names=st.lists(_NAMES, max_size=3, unique=True),
    labels=st.dictionaries(st.sampled_from(["pool", "mode"]), st.sampled_from(["a", "b", "3"])),
)
def test_a_group_is_selected_as_the_scheduler_selects_its_nodes_one_by_one(
    terms: list[dict[str, Any]], names: list[str], labels: dict[str, str]
) -> None:
    # the shortcut over a group (nodes sharing their labels) is the node-by-node rule
    selector = {"nodeSelectorTerms": terms}
    one_by_one = any(node_selector_matches(selector, Node(n, labels)) for n in names)
    assert GroupSelector(selector).selects_some(names, labels) == one_by_one
