"""Layer 00-operators: releases per engine, the values the migration merges into the team's own."""

from __future__ import annotations

from gpuplatform.model import Platform
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.helm_values import merge_values
from gpuplatform.render.operators import (
    CHART_BRIDGE_PATCH,
    argocd_wrappers,
    chart_class_patches,
    render_operators,
)


def _by_kind(reference: Platform, wave: str) -> dict[str, list[dict]]:  # type: ignore[type-arg]
    plan = plan_platform(reference)
    out: dict[str, list[dict]] = {}  # type: ignore[type-arg]
    for obj in render_operators(plan, plan.wave(wave)):
        out.setdefault(obj["kind"], []).append(obj)
    return out


def test_driver_release_only_from_the_wave_that_installs_it(reference: Platform) -> None:
    assert [o["metadata"]["name"] for o in _by_kind(reference, "baseline")["HelmRelease"]] == ["gpu-operator"]
    names = [o["metadata"]["name"] for o in _by_kind(reference, "pilot-pool")["HelmRelease"]]
    assert names == ["gpu-operator", "dra-driver-nvidia-gpu"]
    assert "Namespace" not in _by_kind(reference, "baseline")
    assert _by_kind(reference, "pilot-pool")["Namespace"][0]["metadata"]["name"] == "nvidia-dra-driver-gpu"


def test_dra_driver_values_scope_the_kubelet_plugin_and_pin_the_api(reference: Platform) -> None:
    release = _by_kind(reference, "pilot-pool")["HelmRelease"][1]
    values = release["spec"]["values"]
    assert values["nvidiaDriverRoot"] == "/run/nvidia/driver"
    assert values["gpuResourcesEnabledOverride"] is True
    assert values["resourceApiVersion"] == "resource.k8s.io/v1"
    assert values["kubeletPlugin"]["nodeSelector"] == {"nvidia.com/dra-kubelet-plugin": "true"}
    assert {
        "key": "gpu-scheduling.platform.example.com/mode",
        "operator": "Equal",
        "value": "dra",
        "effect": "NoSchedule",
    } in values["kubeletPlugin"]["tolerations"]
    assert release["spec"]["chart"]["spec"] == {
        "chart": "dra-driver-nvidia-gpu",
        "version": "0.4.1",
        "sourceRef": {"kind": "HelmRepository", "name": "dra-driver-nvidia-gpu", "namespace": "flux-system"},
    }
    repo = next(
        r
        for r in _by_kind(reference, "pilot-pool")["HelmRepository"]
        if r["metadata"]["name"] == "dra-driver-nvidia-gpu"
    )
    assert repo["spec"] == {"interval": "1h", "url": "oci://registry.example.com/charts", "type": "oci"}


def test_device_plugin_disabled_only_when_no_legacy_pool_remains(reference: Platform) -> None:
    def enabled(wave: str) -> bool:
        return bool(_by_kind(reference, wave)["HelmRelease"][0]["spec"]["values"]["devicePlugin"]["enabled"])

    assert enabled("application") is True
    assert enabled("final-cutover") is False


def test_team_values_are_kept(reference: Platform) -> None:
    team = {
        "driver": {"enabled": True, "manager": {"env": [{"name": "ENABLE_AUTO_DRAIN", "value": "true"}]}},
        "mig": {"strategy": "mixed"},
    }
    platform = reference.model_copy(
        update={"gpu_operator": reference.gpu_operator.model_copy(update={"values": team})}
    )
    values = _by_kind(platform, "pilot-pool")["HelmRelease"][0]["spec"]["values"]
    assert values["mig"] == {"strategy": "mixed"}
    assert values["driver"]["enabled"] is True
    assert values["driver"]["manager"]["env"] == [
        {"name": "ENABLE_AUTO_DRAIN", "value": "true"},
        {"name": "NODE_LABEL_FOR_GPU_POD_EVICTION", "value": "nvidia.com/dra-kubelet-plugin"},
    ]


def test_argocd_renders_the_dra_chart_through_its_kustomize_wrapper_and_only_flux_renders_flux(
    reference: Platform,
) -> None:
    plan = plan_platform(reference)
    app = next(
        a
        for a in _by_kind(reference, "pilot-pool")["Application"]
        if a["metadata"]["name"].endswith("dra-driver-nvidia-gpu")
    )
    source = app["spec"]["source"]
    assert source["repoURL"] == reference.delivery.repo_url
    assert source["path"] == "dist/reference/waves/01-pilot-pool/00-operators/argocd/dra-driver-nvidia-gpu"
    [wrapper] = argocd_wrappers(plan, plan.wave("pilot-pool")).values()
    [chart] = wrapper["helmCharts"]
    assert (chart["name"], chart["repo"], chart["version"]) == (
        "dra-driver-nvidia-gpu",
        "oci://registry.example.com/charts",
        "0.4.1",
    )
    assert chart["valuesInline"]["resourceApiVersion"] == "resource.k8s.io/v1"
    assert wrapper["patches"] == [CHART_BRIDGE_PATCH]
    flux_only = reference.model_copy(
        update={"delivery": reference.delivery.model_copy(update={"engines": ("flux",)})}
    )
    assert "Application" not in _by_kind(flux_only, "pilot-pool")


def test_the_chart_class_patch_lasts_until_a_wave_names_the_chart_class_as_the_bridge(
    reference: Platform,
) -> None:
    chart_bridge = reference.bridges[0].model_copy(update={"source": "chart"})
    plan = plan_platform(reference.model_copy(update={"bridges": (chart_bridge,)}))
    assert chart_class_patches(plan, plan.wave("application")) == []
    assert chart_class_patches(plan, plan.wave("native-claim-pilot")) == [CHART_BRIDGE_PATCH]
    [release] = [
        r
        for r in render_operators(plan, plan.wave("native-claim-pilot"))
        if r["kind"] == "HelmRelease" and "dra" in r["metadata"]["name"]
    ]
    assert release["spec"]["postRenderers"] == [{"kustomize": {"patches": [CHART_BRIDGE_PATCH]}}]


def test_merge_values() -> None:
    assert merge_values({"a": [1, 2], "b": {"c": 1}}, {"a": [2, 3], "b": {"d": 2}}) == {
        "a": [1, 2, 3],
        "b": {"c": 1, "d": 2},
    }
    assert merge_values({"x": 1}, {"x": 2}) == {"x": 2}


def test_alerts_only_when_monitoring_is_enabled(reference: Platform) -> None:
    from gpuplatform.render.alerts import render_alerts

    plan = plan_platform(reference)
    assert render_alerts(plan, plan.wave("application")) == []
    monitored = reference.model_copy(
        update={
            "monitoring": reference.monitoring.model_copy(
                update={"enabled": True, "claim_pending_minutes": 30}
            )
        }
    )
    plan = plan_platform(monitored)
    [rule] = render_alerts(plan, plan.wave("application"))
    alerts = {r["alert"]: r for r in rule["spec"]["groups"][0]["rules"]}
    assert set(alerts) == {
        "GpuDevicePluginOnDraNode",
        "GpuDraKubeletPluginNotReady",
        "GpuClaimPendingTooLong",
    }
    assert alerts["GpuClaimPendingTooLong"]["for"] == "30m"
    assert 'namespace=~"gpu-dra-pilot"' in alerts["GpuClaimPendingTooLong"]["expr"]
