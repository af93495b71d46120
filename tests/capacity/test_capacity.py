"""Capacity of hand-built fleets whose answer is known."""

from __future__ import annotations

from gpuplatform.capacity.moments import chart_class_resources
from gpuplatform.capacity.report import WaveCapacity, plan_capacity
from gpuplatform.model import BridgeClass, ClaimTemplate, GpuOperator, Platform, Toleration, Wave
from gpuplatform.plan.waves import plan_platform
from tests.capacity.fleets import platform, pool, workload


def wave(p: object, name: str) -> WaveCapacity:
    (found,) = plan_capacity(plan_platform(p), [name])  # type: ignore[arg-type]
    return found


def test_sixteen_gpus_of_demand_fit_two_eight_gpu_nodes_exactly_and_the_wave_is_tight() -> None:
    result = wave(platform([pool("old", 2)], [workload("train", 4, 4)]), "base")
    assert result.fits and result.tight and result.verdict == "tight"
    assert [(p.capacity, p.free) for p in result.moments[-1].outcome.pools] == [(16, 0)]


def test_one_gpu_short_names_the_workload_and_the_shortfall() -> None:
    result = wave(platform([pool("old", 2)], [workload("train", 4, 4), workload("extra", 1, 1)]), "base")
    assert not result.fits
    (failure,) = result.moments[-1].outcome.failures
    assert failure.demand.name == "workload team/extra"
    assert "only 0 free on device-plugin nodes" in failure.reason


def test_fragmentation_total_suffices_but_no_node_has_enough() -> None:
    result = wave(platform([pool("old", 2)], [workload("big", 3, 5)]), "base")
    (failure,) = result.moments[-1].outcome.failures
    assert failure.placed == 2
    assert "6 free on device-plugin nodes, but no node has 5 free (fragmented)" in failure.reason


MIXED = GpuOperator(values={"mig": {"strategy": "mixed"}})


def test_a_mig_layout_offers_mig_resources_to_legacy_pods_and_mig_devices_to_claims() -> None:
    mig = dict(product="A100-80GB", mig_layout=("3g.40gb", "3g.40gb"))
    fits = platform(
        [pool("mig", 1, gpus=4, migrates_in="pilot", **mig), pool("old", 1, gpus=4, **mig)],
        [workload("legacy", 8, 1, resource="nvidia.com/mig-3g.40gb")],
        [ClaimTemplate(name="slice", tier="mig", claims=8)],
        gpu_operator=MIXED,
    )
    assert wave(fits, "claims").fits
    over = platform(
        [pool("mig", 1, gpus=4, migrates_in="pilot", **mig), pool("old", 1, gpus=4, **mig)],
        [workload("legacy", 9, 1, resource="nvidia.com/mig-3g.40gb")],
        [ClaimTemplate(name="slice", tier="mig", claims=9)],
        gpu_operator=MIXED,
    )
    reasons = [f.reason for f in wave(over, "claims").moments[-1].outcome.failures]
    assert any("only 0 matching device(s) are free" in r for r in reasons)
    assert any("nvidia.com/mig-3g.40gb, but only 0 free" in r for r in reasons)


def test_under_the_single_strategy_mig_devices_are_nvidia_gpu_to_legacy_pods() -> None:
    """The chart's default `mig.strategy: single`: the plugin advertises each MIG device as a GPU."""
    mig = dict(product="A100-80GB", mig_layout=("3g.40gb", "3g.40gb"))
    as_gpus = platform([pool("old", 1, gpus=4, **mig)], [workload("legacy", 8, 1)])
    assert wave(as_gpus, "base").fits
    as_mig = platform(
        [pool("old", 1, gpus=4, **mig)], [workload("legacy", 1, 1, resource="nvidia.com/mig-3g.40gb")]
    )
    (failure,) = wave(as_mig, "base").moments[-1].outcome.failures
    assert "nvidia.com/mig-3g.40gb" in failure.reason


def test_a_claim_shared_by_several_pods_takes_its_devices_once() -> None:
    from gpuplatform.capacity.answers import PlacementCache
    from gpuplatform.capacity.demand import Demand, claim_for
    from gpuplatform.capacity.fleet import build_fleet
    from gpuplatform.capacity.moments import moment_classes
    from gpuplatform.capacity.placement import place

    p = platform([pool("new", 1, gpus=2, migrates_in="pilot")])
    plan = plan_platform(p)
    state = plan.wave("claims")
    claim = claim_for("shared", "team", "full.lab.example.com", 2)
    shared = Demand("shared", "x", 5, 2, claims=(claim,), shared=True, tolerations=({"operator": "Exists"},))
    apart = Demand("apart", "x", 2, 2, claims=(claim,), tolerations=({"operator": "Exists"},))
    classes = moment_classes(plan, state)
    fleet, cache = build_fleet(p), PlacementCache()
    assert not place(fleet, {"new": "dra"}, classes, {}, [shared], cache).failures
    assert [f.placed for f in place(fleet, {"new": "dra"}, classes, {}, [apart], cache).failures] == [1]


def test_the_drain_moment_of_a_transition_can_fail_where_both_waves_fit() -> None:
    moving, staying = workload("moving", 1, 8, moves_in="move"), workload("staying", 1, 8)
    p = platform([pool("a", 1), pool("b", 1, migrates_in="move")], [moving, staying])
    result = wave(p, "move")
    drain, after = result.moments
    assert drain.moment.drained == ("b",) and not drain.fits
    assert after.fits and not result.fits
    assert result.verdict.startswith("does not fit at claims -> move: b drained: workload team/")
    assert wave(p, "claims").fits


def _with_chart_bridge(p: Platform) -> Platform:
    """`p` with a wave after claims that names the chart's `gpu.nvidia.com` class as the bridge."""
    waves = [*p.waves[:3], Wave(name="bridge", stage="compatibility-bridge", bridges=["chart"]), p.waves[-1]]
    return p.model_copy(
        update={"bridges": (BridgeClass(name="chart", source="chart"),), "waves": tuple(waves)}
    )


def test_a_bridge_serves_legacy_pods_that_tolerate_the_dra_taint_and_only_those() -> None:
    toleration = Toleration(key="gpu-scheduling.lab.example.com/mode", operator="Exists")
    tolerant = workload("tolerant", 2, 8, tolerations=[toleration])
    p = _with_chart_bridge(platform([pool("old", 1), pool("new", 1, migrates_in="pilot")], [tolerant]))
    moment = wave(p, "bridge").moments[-1]
    assert moment.fits and moment.outcome.bridged == 1
    strict = platform([pool("old", 1), pool("new", 1, migrates_in="pilot")], [workload("strict", 2, 8)])
    (failure,) = wave(_with_chart_bridge(strict), "bridge").moments[-1].outcome.failures
    assert (
        "the bridge class gpu.nvidia.com cannot serve it: it tolerates no DRA pool's taint" in failure.reason
    )


def test_before_the_bridge_wave_the_patched_chart_class_serves_nothing_and_capacity_says_so() -> None:
    # GIVEN a chart whose gpu.nvidia.com class declares extendedResourceName, patched away until
    # the bridge wave
    toleration = Toleration(key="gpu-scheduling.lab.example.com/mode", operator="Exists")
    tolerant = workload("tolerant", 2, 8, tolerations=[toleration])
    p = _with_chart_bridge(platform([pool("old", 1), pool("new", 1, migrates_in="pilot")], [tolerant]))
    plan = plan_platform(p)
    # THEN the chart model of the claims wave's release has no bridge, and the misfit says so
    assert chart_class_resources(plan, plan.wave("claims")) == {}
    assert chart_class_resources(plan, plan.wave("bridge")) == {"gpu.nvidia.com": "nvidia.com/gpu"}
    (failure,) = wave(p, "claims").moments[-1].outcome.failures
    assert failure.reason.endswith("; no bridge class serves nvidia.com/gpu in this wave")
    assert "gpu.nvidia.com" not in failure.reason


def test_node_selectors_keep_legacy_pods_on_matching_pools() -> None:
    a100 = pool("a100", 1, product="A100-80GB")
    p = platform(
        [a100, pool("h100", 1)],
        [workload("h", 2, 8, node_selector={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"})],
    )
    (failure,) = wave(p, "base").moments[-1].outcome.failures
    assert failure.placed == 1


def test_migrated_workloads_claim_devices_of_their_tier_and_free_the_device_plugin() -> None:
    p = platform(
        [pool("old", 1), pool("new", 1, migrates_in="pilot")], [workload("train", 2, 4, moves_in="move")]
    )
    before, after = wave(p, "claims"), wave(p, "move")
    assert before.moments[-1].demand == {"devicePlugin": 8, "dra": 0}
    assert after.moments[-1].demand == {"devicePlugin": 0, "dra": 8}
    assert after.moments[-1].outcome.tiers["full"] == 0


def test_classes_that_select_alike_share_answers_but_errors_name_their_own_class() -> None:
    from gpuplatform.capacity.answers import PlacementCache
    from gpuplatform.capacity.claims import DeviceClass
    from gpuplatform.capacity.demand import Demand, claim_for
    from gpuplatform.capacity.fleet import build_fleet
    from gpuplatform.capacity.placement import place

    p = platform([pool("new", 1, gpus=2, migrates_in="pilot")])
    tolerate = ({"operator": "Exists"},)
    fine = "device.attributes['gpu.nvidia.com'].type == 'gpu'"
    broken = "device.attributes['gpu.nvidia.com'].noSuchAttribute == 'x'"
    classes = {n: DeviceClass(n, (e,)) for n, e in (("a", fine), ("b", fine), ("c", broken), ("d", broken))}
    demands = [
        Demand(name, "x", 1, 2, claims=(claim_for(name, "team", name, 2),), tolerations=tolerate)
        for name in "abcd"
    ]
    cache = PlacementCache()
    outcome = place(build_fleet(p), {"new": "dra"}, classes, {}, demands, cache)
    # a took both devices, so b (same selectors, shared answer) finds none; c and d fail on their own
    assert [f.demand.name for f in outcome.failures] == ["b", "c", "d"]
    reasons = {f.demand.name: f.reason for f in outcome.failures}
    assert reasons["c"].startswith("class c: selector #0: CEL runtime error")
    assert reasons["d"].startswith("class d: selector #0: CEL runtime error")
