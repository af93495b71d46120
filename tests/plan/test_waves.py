"""Wave semantics: pool modes, driver presence, cumulative enables, device plugin, validation."""

from __future__ import annotations

from gpuplatform.model import Platform
from gpuplatform.plan.waves import plan_platform
from tests.specs import minimal_spec


def _plan(mutate: object = None) -> object:
    doc = minimal_spec()
    if callable(mutate):
        mutate(doc["spec"])
    return plan_platform(Platform.model_validate({"name": "lab", **doc["spec"]}))


def test_reference_waves(reference: Platform) -> None:
    plan = plan_platform(reference)
    modes = [(s.dir_name, s.pool_modes["dra-pilot"], s.pool_modes["legacy"]) for s in plan.waves]
    assert modes == [
        ("00-baseline", "legacy", "legacy"),
        ("01-pilot-pool", "dra", "legacy"),
        ("02-driver-validation", "dra", "legacy"),
        ("03-native-claim-pilot", "dra", "legacy"),
        ("04-compatibility-bridge", "dra", "legacy"),
        ("05-application", "dra", "legacy"),
        ("06-final-cutover", "dra", "dra"),
    ]
    assert [s.driver_installed for s in plan.waves] == [False] + [True] * 6
    assert [s.device_plugin_enabled for s in plan.waves] == [True] * 6 + [False]
    assert [s.validation for s in plan.waves] == [False] * 3 + [True] * 4
    assert plan.wave("compatibility-bridge").bridges == ("nvidia-gpu-legacy-bridge",)
    assert plan.wave("application").tiers == ("nvidia-hopper-large-memory",)
    assert plan.active.name == "native-claim-pilot"


def test_chart_bridge_is_live_on_136_and_off_on_135_without_the_gate(reference: Platform) -> None:
    assert plan_platform(reference).chart_bridge_live
    old = reference.model_copy(
        update={"kubernetes": reference.kubernetes.model_copy(update={"version": "1.35.3"})}
    )
    assert not plan_platform(old).chart_bridge_live
    gated = old.model_copy(
        update={
            "kubernetes": old.kubernetes.model_copy(update={"feature_gates": {"DRAExtendedResource": True}})
        }
    )
    assert plan_platform(gated).chart_bridge_live
    calendar = reference.model_copy(
        update={"dra_driver": reference.dra_driver.model_copy(update={"chart_version": "25.8.1"})}
    )
    assert not plan_platform(calendar).chart_bridge_live


def test_workloads_move_in_their_wave_and_stay_moved() -> None:
    def mutate(spec: dict) -> None:  # type: ignore[type-arg]
        spec["workloads"] = [
            {
                "kind": "Deployment",
                "namespace": "team-a",
                "name": "trainer",
                "tier": "full",
                "movesIn": "claims",
            }
        ]

    plan = _plan(mutate)
    assert [s.workloads for s in plan.waves] == [(), (), (0,), (0,)]  # type: ignore[attr-defined]


def test_pool_without_migrates_in_moves_at_final_cutover_and_never_without_one() -> None:
    plan = _plan()
    assert [s.pool_modes["old"] for s in plan.waves] == ["legacy", "legacy", "legacy", "dra"]  # type: ignore[attr-defined]

    def no_cutover(spec: dict) -> None:  # type: ignore[type-arg]
        spec["waves"] = spec["waves"][:3]

    plan = _plan(no_cutover)
    assert all(s.pool_modes["old"] == "legacy" for s in plan.waves)  # type: ignore[attr-defined]
