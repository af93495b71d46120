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
    assert [n["metadata"]["name"] for n in _by_kind(reference, "baseline")["Namespace"]] == ["gpu-operator"]
    assert [n["metadata"]["name"] for n in _by_kind(reference, "pilot-pool")["Namespace"]] == [
        "gpu-operator",
        "nvidia-dra-driver-gpu",
    ]


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
    assert release["spec"]["chartRef"] == {
        "kind": "OCIRepository",
        "name": "dra-driver-nvidia-gpu",
        "namespace": "flux-system",
    }
    [repo] = _by_kind(reference, "pilot-pool")["OCIRepository"]
    assert repo["spec"] == {
        "interval": "1h",
        "url": "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu",
        "ref": {"tag": "0.4.1"},
        "layerSelector": {
            "mediaType": "application/vnd.cncf.helm.chart.content.v1.tar+gzip",
            "operation": "copy",
        },
    }


def test_before_flux_2_6_an_oci_chart_comes_from_a_helm_repository(reference: Platform) -> None:
    # GIVEN clusters on Flux 2.5, whose OCIRepository is still v1beta2
    platform = _with(reference, delivery={"flux_version": "2.5.3"})
    objects = _by_kind(platform, "pilot-pool")
    # THEN the driver's chart comes from a HelmRepository of type oci, named in chart.spec
    assert "OCIRepository" not in objects
    release = next(r for r in objects["HelmRelease"] if r["metadata"]["name"] == "dra-driver-nvidia-gpu")
    assert release["spec"]["chart"]["spec"] == {
        "chart": "dra-driver-nvidia-gpu",
        "version": "0.4.1",
        "sourceRef": {"kind": "HelmRepository", "name": "dra-driver-nvidia-gpu", "namespace": "flux-system"},
    }
    repo = next(r for r in objects["HelmRepository"] if r["metadata"]["name"] == "dra-driver-nvidia-gpu")
    assert repo["spec"] == {
        "interval": "1h",
        "url": "oci://registry.k8s.io/dra-driver-nvidia/charts",
        "type": "oci",
    }


def test_a_failed_upgrade_is_never_rolled_back(reference: Platform) -> None:
    def upgrade(flux: str) -> list[object]:
        objects = _by_kind(_with(reference, delivery={"flux_version": flux}), "pilot-pool")
        return [r["spec"]["upgrade"] for r in objects["HelmRelease"]]

    retry = {"crds": "CreateReplace", "strategy": {"name": "RetryOnFailure", "retryInterval": "5m"}}
    stop = {"crds": "CreateReplace", "remediation": {"retries": 0, "remediateLastFailure": False}}
    assert upgrade("2.7.0") == [retry, retry]
    assert upgrade("2.6.9") == [stop, stop]


def test_releases_correct_drift_and_keep_what_cert_manager_injects(reference: Platform) -> None:
    releases = {r["metadata"]["name"]: r for r in _by_kind(reference, "pilot-pool")["HelmRelease"]}
    assert releases["gpu-operator"]["spec"]["driftDetection"] == {"mode": "enabled"}
    assert releases["dra-driver-nvidia-gpu"]["spec"]["driftDetection"] == {
        "mode": "enabled",
        "ignore": [
            {
                "paths": ["/webhooks/0/clientConfig/caBundle"],
                "target": {"kind": "ValidatingWebhookConfiguration"},
            }
        ],
    }


def test_the_driver_release_waits_for_one_startup_budget_per_rollout_batch(reference: Platform) -> None:
    def timeout(platform: Platform) -> str:
        objects = _by_kind(platform, "pilot-pool")
        return next(r for r in objects["HelmRelease"] if r["metadata"]["name"] == "dra-driver-nvidia-gpu")[
            "spec"
        ]["timeout"]

    # GIVEN the pilot wave's one DRA node: 15m for the release, 10m for the node
    assert timeout(reference) == "25m"
    # WHEN the pilot pool has 12 nodes, one at a time, then 25% at a time (3 nodes, 4 batches)
    pools = [
        p.model_copy(update={"nodes": tuple(f"gpu-{i:02}" for i in range(12))})
        if p.nodes and p.migrates_in
        else p
        for p in reference.node_pools
    ]
    big = reference.model_copy(update={"node_pools": pools})
    assert timeout(big) == f"{15 + 10 * sum(len(p.nodes) for p in pools if p.migrates_in == 'pilot-pool')}m"
    quarter = _with(big, dra_driver={"kubelet_plugin_max_unavailable": "25%"})
    assert timeout(quarter) == "55m"


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
        "oci://registry.k8s.io/dra-driver-nvidia/charts",
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


def _with(reference: Platform, **changes: dict) -> Platform:  # type: ignore[type-arg]
    return reference.model_copy(
        update={k: getattr(reference, k).model_copy(update=v) for k, v in changes.items()}
    )


def test_the_operator_release_upgrades_the_running_one_in_place(reference: Platform) -> None:
    # GIVEN a team whose running release is gpu-ops/nvidia-gpu-operator
    platform = _with(reference, gpu_operator={"namespace": "gpu-ops", "release_name": "nvidia-gpu-operator"})
    objects = _by_kind(platform, "baseline")
    # THEN Flux finds it in its Helm storage, under its name, and never prunes it
    [release] = [r for r in objects["HelmRelease"] if r["metadata"]["name"] == "nvidia-gpu-operator"]
    assert {k: release["spec"][k] for k in ("releaseName", "targetNamespace", "storageNamespace")} == {
        "releaseName": "nvidia-gpu-operator",
        "targetNamespace": "gpu-ops",
        "storageNamespace": "gpu-ops",
    }
    assert release["metadata"]["annotations"] == {"kustomize.toolkit.fluxcd.io/prune": "disabled"}
    # AND Argo CD renders it under the same release name, never pruning or deleting the Application
    [app] = [a for a in objects["Application"] if a["spec"]["source"]["chart"] == "gpu-operator"]
    assert app["spec"]["source"]["helm"]["releaseName"] == "nvidia-gpu-operator"
    assert app["spec"]["destination"]["namespace"] == "gpu-ops"
    assert app["metadata"]["annotations"]["argocd.argoproj.io/sync-options"] == "Prune=false,Delete=false"
    # AND its Namespace exists, privileged and protected
    [ns] = objects["Namespace"]
    assert ns["metadata"]["name"] == "gpu-ops"
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    assert ns["metadata"]["annotations"]["kustomize.toolkit.fluxcd.io/prune"] == "disabled"


def test_the_driver_version_comes_from_the_spec_not_the_chart_default(reference: Platform) -> None:
    platform = _with(reference, gpu_operator={"driver_version": "580.95.05"})
    [release] = [
        r for r in _by_kind(platform, "baseline")["HelmRelease"] if r["metadata"]["name"] == "gpu-operator"
    ]
    assert release["spec"]["values"]["driver"]["version"] == "580.95.05"


def test_an_unmanaged_operator_renders_no_release(reference: Platform) -> None:
    platform = _with(reference, gpu_operator={"managed": False})
    objects = _by_kind(platform, "pilot-pool")
    assert [r["metadata"]["name"] for r in objects["HelmRelease"]] == ["dra-driver-nvidia-gpu"]
    assert [n["metadata"]["name"] for n in objects["Namespace"]] == ["nvidia-dra-driver-gpu"]


def test_operands_and_nfd_workers_tolerate_every_gpu_node_taint(reference: Platform) -> None:
    values = _by_kind(reference, "baseline")["HelmRelease"][0]["spec"]["values"]
    taint = {
        "key": "gpu-scheduling.platform.example.com/mode",
        "operator": "Equal",
        "value": "dra",
        "effect": "NoSchedule",
    }
    # the chart's defaults are kept (Helm replaces a list it is given)
    assert values["daemonsets"]["tolerations"] == [
        {"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"},
        taint,
    ]
    assert taint in values["node-feature-discovery"]["worker"]["tolerations"]
    assert {
        "effect": "NoSchedule",
        "key": "node-role.kubernetes.io/control-plane",
        "operator": "Equal",
        "value": "",
    } in values["node-feature-discovery"]["worker"]["tolerations"]


def test_team_tolerations_are_kept_and_a_tolerated_taint_is_not_added_twice(reference: Platform) -> None:
    platform = _with(
        reference, gpu_operator={"values": {"daemonsets": {"tolerations": [{"operator": "Exists"}]}}}
    )
    values = _by_kind(platform, "baseline")["HelmRelease"][0]["spec"]["values"]
    assert values["daemonsets"]["tolerations"] == [{"operator": "Exists"}]


def test_nfd_tolerations_only_where_the_chart_runs_nfd(reference: Platform) -> None:
    platform = _with(reference, gpu_operator={"values": {"nfd": {"enabled": False}}})
    values = _by_kind(platform, "baseline")["HelmRelease"][0]["spec"]["values"]
    assert "node-feature-discovery" not in values


def test_compute_domains_off_unless_enabled_and_the_plugin_rolls_out_one_node_at_a_time(
    reference: Platform,
) -> None:
    values = _by_kind(reference, "pilot-pool")["HelmRelease"][1]["spec"]["values"]
    assert values["resources"] == {"computeDomains": {"enabled": False}}
    assert values["kubeletPlugin"]["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 1},
    }
    platform = _with(reference, dra_driver={"compute_domains": True, "kubelet_plugin_max_unavailable": "25%"})
    values = _by_kind(platform, "pilot-pool")["HelmRelease"][1]["spec"]["values"]
    assert values["resources"] == {"computeDomains": {"enabled": True}}
    assert values["kubeletPlugin"]["updateStrategy"]["rollingUpdate"] == {"maxUnavailable": "25%"}


def test_child_applications_carry_the_resources_finalizer(reference: Platform) -> None:
    apps = _by_kind(reference, "pilot-pool")["Application"]
    assert {a["metadata"]["name"] for a in apps} == {
        "reference-gpu-operator",
        "reference-dra-driver-nvidia-gpu",
    }
    assert all(a["metadata"]["finalizers"] == ["resources-finalizer.argocd.argoproj.io"] for a in apps)


def test_the_dra_chart_before_0_4_is_nvidia_dra_driver_gpu_from_ngc(reference: Platform) -> None:
    platform = _with(reference, dra_driver={"chart_version": "25.12.0"})
    objects = _by_kind(platform, "pilot-pool")
    [release] = [r for r in objects["HelmRelease"] if r["metadata"]["name"] == "nvidia-dra-driver-gpu"]
    assert release["spec"]["chart"]["spec"]["chart"] == "nvidia-dra-driver-gpu"
    [repo] = [r for r in objects["HelmRepository"] if r["metadata"]["name"] == "nvidia-dra-driver-gpu"]
    assert repo["spec"]["url"] == "https://helm.ngc.nvidia.com/nvidia"


#: Series kube-state-metrics exports by default (kubernetes/kube-state-metrics docs/metrics).
KSM_DEFAULT = {
    "kube_pod_info",
    "kube_node_spec_taint",
    "kube_daemonset_status_number_unavailable",
    "kube_pod_status_phase",
}


def test_alerts_read_only_default_kube_state_metrics_series(reference: Platform) -> None:
    import re

    from gpuplatform.render.alerts import render_alerts

    monitored = reference.model_copy(
        update={"monitoring": reference.monitoring.model_copy(update={"enabled": True})}
    )
    plan = plan_platform(monitored)
    [rule] = render_alerts(plan, plan.wave("pilot-pool"))
    rules = {r["alert"]: r["expr"] for r in rule["spec"]["groups"][0]["rules"]}
    for alert, expr in rules.items():
        series = set(re.findall(r"\b(kube_[a-z_]+)\b", expr))
        assert series and series <= KSM_DEFAULT, alert
    # a DRA node is recognised by its pool's taint, not by a label KSM does not export by default
    assert (
        'kube_node_spec_taint{key="gpu-scheduling.platform.example.com/mode", value="dra", effect="NoSchedule"}'
        in rules["GpuDevicePluginOnDraNode"]
    )
    assert "kube_node_labels" not in rules["GpuDevicePluginOnDraNode"]


def test_each_helm_release_and_its_source_share_flux_s_namespace_and_name_the_release_s(
    reference: Platform,
) -> None:
    # GIVEN the releases of a wave that installs both charts, rendered for the oldest and the newest Flux
    for flux in ("2.3.0", str(reference.delivery.flux_version)):
        delivery = reference.delivery.model_copy(update={"flux_version": flux})
        kinds = _by_kind(reference.model_copy(update={"delivery": delivery}), "pilot-pool")
        sources = {
            (o["kind"], o["metadata"]["name"]): o
            for k in ("HelmRepository", "OCIRepository")
            for o in kinds.get(k, [])
        }
        for release in kinds["HelmRelease"]:
            spec = release["spec"]
            ref = spec["chartRef"] if "chartRef" in spec else spec["chart"]["spec"]["sourceRef"]
            # THEN the release lives in Flux's namespace (docs/delivery.md "where they live") and its
            # source too: no cross-namespace reference for `--no-cross-namespace-refs` to refuse
            assert release["metadata"]["namespace"] == ref["namespace"] == "flux-system"
            assert sources[(ref["kind"], ref["name"])]["metadata"]["namespace"] == "flux-system"
            # AND it names the release's namespace for both the objects and Helm's storage
            assert spec["targetNamespace"] == spec["storageNamespace"] != "flux-system"
