"""`helm template` of the shared reference charts with every values object the stacks render.

Each release must render; every values key it is given must be read by the chart (a key helm
ignores is a typo or a key of another chart version); the DRA kubelet plugin must land on exactly
the wave's DRA nodes; the operator's operands and NFD workers must tolerate every GPU-node taint;
the platform's AppProject must permit every object the chart renders (CRDs included); the chart's
DeviceClasses must not collide with the platform's; the chart facts must predict what helm renders.
"""

from __future__ import annotations

import copy
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gpuplatform.charts.facts import (
    CLUSTER_SCOPED_KINDS,
    RBAC_KINDS,
    ChartFacts,
    chart_facts,
    leaf_paths,
    value_at,
)
from gpuplatform.labels import DRA_PLUGIN_LABEL
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.versions import CHART_DEVICE_CLASSES
from tests.realtools.conftest import Helm, Rendered, chart_folder, releases
from tests.realtools.kube import may_bind, permitted, rbac_covers, schedulable, tolerated

#: Labels the GPU Operator (GFD) and NFD put on every GPU node; the DRA chart's default node
#: affinity requires one of them (dra-driver-nvidia-gpu 0.4.1 values.yaml `kubeletPlugin.affinity`).
GPU_NODE_LABELS = {"nvidia.com/gpu.present": "true", "feature.node.kubernetes.io/pci-10de.present": "true"}


@dataclass(frozen=True)
class Release:
    platform: str
    wave: WaveState
    chart: str
    release: str
    namespace: str
    values: dict[str, Any]
    folder: Path
    facts: ChartFacts


def _releases(rendered: Rendered) -> list[Release]:
    """One per (platform, wave, chart); Flux and Argo CD must carry the same values."""
    found: dict[tuple[str, str, str], Release] = {}
    for name, tree in sorted(rendered.trees.items()):
        plan = rendered.plans[name]
        for path, chart, version, release, namespace, values in releases(tree):
            wave = next(s for s in plan.waves if path.startswith(f"waves/{s.dir_name}/"))
            folder = chart_folder(chart, version)
            if folder is None:
                continue
            component = "gpu-operator" if chart == "gpu-operator" else "dra-driver"
            facts, _ = chart_facts(component, version.lstrip("v"))
            item = Release(name, wave, chart, release, namespace, values, folder, facts)
            key = (name, wave.name, chart)
            assert found.setdefault(key, item).values == values, f"{path}: engines disagree on the values"
    return list(found.values())


@pytest.fixture(scope="module")
def charted(rendered: Rendered, helm: Helm) -> list[tuple[Release, list[dict[str, Any]]]]:
    out = []
    for r in _releases(rendered):
        docs = helm.template(
            r.folder,
            r.values,
            release=r.release,
            namespace=r.namespace,
            kube_version=rendered.plans[r.platform].platform.kubernetes.version,
        )
        assert not isinstance(docs, str), f"{r.platform}/{r.wave.name}/{r.chart}: {docs}"
        out.append((r, docs))
    assert {r.chart for r, _ in out} == {"gpu-operator", "dra-driver-nvidia-gpu"}
    return out


def _perturbed(value: Any) -> Any:
    """A different value of the same shape, so a chart that reads the key renders something else."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, str):
        return value + "0"
    if isinstance(value, list):
        return value[:-1] if value else [{"name": "gpuplatform-probe"}]
    if isinstance(value, dict):
        return {"gpuplatform-probe": "x"}
    return "gpuplatform-probe"


def _set(values: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(values)
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return out


def _reads(helm: Helm, rendered: Rendered, r: Release, path: tuple[str, ...], base: Any) -> bool:
    """Whether helm renders something else when the value at `path` changes."""
    changed = _set(r.values, path, _perturbed(value_at(r.values, path)))
    kube = rendered.plans[r.platform].platform.kubernetes.version
    return (
        helm.template(r.folder, changed, release=r.release, namespace=r.namespace, kube_version=kube) != base
    )


def test_every_values_key_is_read_by_the_chart(
    charted: list[tuple[Release, list[dict[str, Any]]]], helm: Helm, rendered: Rendered
) -> None:
    probes: dict[tuple[str, tuple[str, ...]], tuple[Release, list[dict[str, Any]]]] = {}
    for r, docs in charted:
        for path, _ in leaf_paths(r.values):
            probes.setdefault((r.chart, path), (r, docs))
    with ThreadPoolExecutor(max_workers=4) as pool:
        read = dict(
            zip(
                probes,
                pool.map(lambda key: _reads(helm, rendered, probes[key][0], key[1], probes[key][1]), probes),
                strict=True,
            )
        )
    for (chart, path), (r, _) in sorted(probes.items()):
        assert read[(chart, path)], f"{chart}: values key {'.'.join(path)} is not read"
        assert r.facts.reads_path(path), f"{chart} facts miss {'.'.join(path)}, which helm reads"


def test_an_unread_key_is_caught_by_helm_and_by_the_chart_facts(
    charted: list[tuple[Release, list[dict[str, Any]]]], helm: Helm, rendered: Rendered
) -> None:
    # GIVEN a typo (nodeselector) and a key GPU Operator 26.3 no longer has (operator.defaultRuntime)
    for chart, path in (
        ("dra-driver-nvidia-gpu", ("kubeletPlugin", "nodeselector", "x")),
        ("gpu-operator", ("operator", "defaultRuntime")),
    ):
        r, docs = next((r, d) for r, d in charted if r.chart == chart)
        values = copy.deepcopy(r.values)
        node = values
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = "containerd"
        probe = Release(r.platform, r.wave, r.chart, r.release, r.namespace, values, r.folder, r.facts)
        kube = rendered.plans[r.platform].platform.kubernetes.version
        with_key = helm.template(
            r.folder, values, release=r.release, namespace=r.namespace, kube_version=kube
        )
        # THEN helm renders the same with or without it, and the facts agree it is not read
        assert with_key == docs
        assert not _reads(helm, rendered, probe, path, with_key)
        assert not r.facts.reads_path(path)


def _nodes(
    plan: Plan, tree_files: dict[str, Any], state: WaveState
) -> list[tuple[str, str, dict[str, str], list[Any]]]:
    """(node, mode, labels, taints) of every GPU node in the wave, from the pools' hand-offs; a DRA
    node also carries the kubelet plugin's label, which the allocator switch's enable Job sets."""
    out = []
    for path, content in sorted(tree_files.items()):
        if path.startswith(f"handoff/{state.dir_name}/") and isinstance(content, list):
            for obj in content:
                if obj["kind"] != "NodePoolHandoff":
                    continue
                spec = obj["spec"]
                for node in spec["nodes"] or [f"{obj['metadata']['name']}-node"]:
                    switched = {DRA_PLUGIN_LABEL: "true"} if spec["mode"] == "dra" else {}
                    labels = {**GPU_NODE_LABELS, **spec["labels"], **switched}
                    out.append((node, spec["mode"], labels, spec["taints"]))
    return out


def _handoff_taints(files: dict[str, Any]) -> list[dict[str, Any]]:
    """Every taint any wave hands to a pool's provisioner: the taints GPU nodes will carry."""
    return [
        taint
        for path, content in sorted(files.items())
        if path.startswith("handoff/") and isinstance(content, list)
        for obj in content
        if obj["kind"] == "NodePoolHandoff"
        for taint in obj["spec"]["taints"]
    ]


def _pod(docs: list[dict[str, Any]], kind: str, suffix: str) -> dict[str, Any]:
    [obj] = [d for d in docs if d["kind"] == kind and d["metadata"]["name"].endswith(suffix)]
    return dict(obj["spec"]["template"]["spec"])


def test_the_kubelet_plugin_lands_on_exactly_the_waves_dra_nodes(
    charted: list[tuple[Release, list[dict[str, Any]]]], rendered: Rendered
) -> None:
    checked = 0
    for r, docs in charted:
        if r.facts.component != "dra-driver":
            continue
        pod = _pod(docs, "DaemonSet", "-kubelet-plugin")
        # ComputeDomains off: no compute-domains container whose crash would take the pod's readiness
        assert [c["name"] for c in pod["containers"]] == ["gpus"]
        assert not [
            d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"].endswith("-controller")
        ]
        plan, files = rendered.plans[r.platform], rendered.trees[r.platform].files
        nodes = _nodes(plan, files, r.wave)
        landed = {n for n, _, labels, taints in nodes if schedulable(pod, labels, taints)}
        assert landed == {n for n, mode, _, _ in nodes if mode == "dra"}, f"{r.platform}/{r.wave.name}"
        checked += 1
    assert checked


def test_operands_and_nfd_workers_tolerate_every_gpu_node_taint(
    charted: list[tuple[Release, list[dict[str, Any]]]], rendered: Rendered
) -> None:
    checked = 0
    for r, docs in charted:
        if r.chart != "gpu-operator":
            continue
        taints = _handoff_taints(rendered.trees[r.platform].files)
        assert taints, r.platform
        [policy] = [d for d in docs if d["kind"] == "ClusterPolicy"]
        # the operator copies these onto every operand DaemonSet (object_controls.go applyCommonDaemonsetConfig)
        assert tolerated(policy["spec"]["daemonsets"]["tolerations"], taints), f"{r.platform}/{r.wave.name}"
        worker = _pod(docs, "DaemonSet", "node-feature-discovery-worker")
        assert tolerated(worker["tolerations"], taints), f"{r.platform}/{r.wave.name}: NFD worker"
        checked += 1
    assert checked


def test_a_pool_taint_the_chart_does_not_tolerate_is_caught() -> None:
    # GIVEN the chart's default operand tolerations and a DRA pool taint
    default = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    taint = [{"key": "gpu-scheduling.example.com/mode", "value": "dra", "effect": "NoSchedule"}]
    # THEN the scheduler model keeps the operand off the node
    assert not tolerated(default, taint)
    assert not schedulable({"tolerations": default}, GPU_NODE_LABELS, taint)


def _project(rendered: Rendered, platform: str) -> dict[str, Any]:
    files = rendered.trees[platform].files
    [project] = [c[0] for p, c in files.items() if p.startswith("delivery/argocd/appproject_")]  # type: ignore[index]
    return dict(project)


def _namespaced(doc: dict[str, Any], facts: ChartFacts) -> bool:
    group = doc["apiVersion"].rsplit("/", 1)[0] if "/" in doc["apiVersion"] else ""
    return (group, doc["kind"]) not in facts.cluster_scoped()


def test_the_app_project_permits_every_object_the_charts_render(
    charted: list[tuple[Release, list[dict[str, Any]]]], rendered: Rendered
) -> None:
    for r, docs in charted:
        plan = rendered.plans[r.platform]
        if "argocd" not in plan.platform.delivery.engines:
            continue
        project = _project(rendered, r.platform)
        for doc in docs:
            namespaced = _namespaced(doc, r.facts)
            if namespaced:
                doc = {**doc, "metadata": {"namespace": r.namespace, **doc["metadata"]}}
            assert permitted(project, doc, plan.platform.delivery.cluster_server, namespaced), (
                f"{r.platform}/{r.wave.name}: {doc['kind']}/{doc['metadata']['name']} not permitted"
            )


def _sync_rules(rendered: Rendered, platform: str) -> list[dict[str, Any]]:
    files = rendered.trees[platform].files
    [role] = [
        o
        for p, c in files.items()
        if p.startswith("delivery/argocd-sync/cluster/") and isinstance(c, list)
        for o in c
        if o["kind"] == "ClusterRole"
    ]
    return list(role["rules"])


def test_the_sync_identity_may_write_and_bind_every_role_the_charts_render_without_escalate(
    charted: list[tuple[Release, list[dict[str, Any]]]], rendered: Rendered
) -> None:
    # GIVEN the sync identity of each Argo CD platform, which has no `escalate`
    for r, docs in charted:
        if "argocd" not in rendered.plans[r.platform].platform.delivery.engines:
            continue
        held = _sync_rules(rendered, r.platform)
        assert not any("escalate" in h["verbs"] or "*" in h["verbs"] for h in held)
        roles = {(d["kind"], d["metadata"]["name"]): d.get("rules") or [] for d in docs if "rules" in d}
        where = f"{r.platform}/{r.wave.name}/{r.chart}"
        # THEN the API server lets it write every role helm renders (it holds each rule: escalation
        # prevention) and bind every role the chart's bindings name
        for (kind, name), rules in roles.items():
            for rule in rules:
                assert rbac_covers(held, rule), f"{where}: {kind}/{name} grants {rule}, not held"
        for doc in docs:
            if "roleRef" in doc:
                ref = doc["roleRef"]
                rules = roles.get((ref["kind"], ref["name"]), [{"verbs": ["*"], "apiGroups": ["*"]}])
                assert may_bind(held, ref["kind"], ref["name"], rules), f"{where}: cannot bind {ref}"


def test_an_object_outside_the_whitelist_is_refused(rendered: Rendered) -> None:
    project = _project(rendered, "reference")
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "x.example.com"},
    }
    assert not permitted(project, crd, "https://kubernetes.default.svc", False)
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "some-other-node"}}
    assert not permitted(project, node, "https://kubernetes.default.svc", False)


def test_the_chart_facts_predict_what_helm_renders(
    charted: list[tuple[Release, list[dict[str, Any]]]],
) -> None:
    for r, docs in charted:
        predicted = {
            (k.group, k.kind, k.namespaced, k.named(r.release, r.namespace))
            for k in r.facts.installs(r.values)
        }
        actual = set()
        for doc in docs:
            group = doc["apiVersion"].rsplit("/", 1)[0] if "/" in doc["apiVersion"] else ""
            by_name = doc["kind"] == "CustomResourceDefinition" or (group, doc["kind"]) in RBAC_KINDS
            name = doc["metadata"]["name"] if by_name else ""
            actual.add((group, doc["kind"], _namespaced(doc, r.facts), name))
        assert predicted == actual, f"{r.platform}/{r.wave.name}/{r.chart}"
        assert {(g, k) for g, k, n, _ in actual if not n} <= CLUSTER_SCOPED_KINDS | r.facts.cluster_scoped()


def test_the_charts_device_classes_do_not_collide_with_the_platforms(
    charted: list[tuple[Release, list[dict[str, Any]]]], rendered: Rendered
) -> None:
    for r, docs in charted:
        if r.facts.component != "dra-driver":
            continue
        chart_classes = {
            d["metadata"]["name"]: d["spec"].get("extendedResourceName", "")
            for d in docs
            if d["kind"] == "DeviceClass"
        }
        # versions.CHART_DEVICE_CLASSES (read by the quota and the bridge rules) is what the chart renders
        assert chart_classes.items() <= CHART_DEVICE_CLASSES.items(), f"{r.platform}/{r.wave.name}"
        platform = {
            c[0]["metadata"]["name"]
            for p, c in rendered.trees[r.platform].files.items()
            if p.startswith(f"waves/{r.wave.dir_name}/20-device-classes/")
            and isinstance(c, list)
            and c[0]["kind"] == "DeviceClass"
        }
        assert not platform & set(chart_classes), f"{r.platform}/{r.wave.name}"


def test_the_older_dra_chart_and_compute_domains_on_read_every_key(helm: Helm, rendered: Rendered) -> None:
    """The 25.12 chart (`nvidia-dra-driver-gpu`) with ComputeDomains on and a wider rollout: the
    values the stacks do not render are proven against helm too."""
    from gpuplatform.plan.waves import plan_platform
    from gpuplatform.render.operators import helm_charts

    reference = rendered.plans["reference"].platform
    variant = reference.model_copy(
        update={
            "dra_driver": reference.dra_driver.model_copy(
                update={
                    "chart_version": "25.12.0",
                    "compute_domains": True,
                    "kubelet_plugin_max_unavailable": "25%",
                    "feature_gates": {"NVMLDeviceHealthCheck": True},
                }
            )
        }
    )
    plan = plan_platform(variant)
    state = plan.wave("pilot-pool")
    [chart] = [c for c in helm_charts(plan, state) if c.facts.component == "dra-driver"]
    folder = chart_folder(chart.chart, chart.version)
    assert folder is not None and chart.chart == "nvidia-dra-driver-gpu"
    r = Release(
        "reference", state, chart.chart, chart.release, chart.namespace, chart.values, folder, chart.facts
    )
    docs = helm.template(
        folder, chart.values, release=r.release, namespace=r.namespace, kube_version="1.36.1"
    )
    assert not isinstance(docs, str), docs
    for path, _ in leaf_paths(chart.values):
        assert _reads(helm, rendered, r, path, docs), f"{'.'.join(path)} is not read"
        assert chart.facts.reads_path(path)
    pod = _pod(docs, "DaemonSet", "-kubelet-plugin")
    assert [c["name"] for c in pod["containers"]] == ["compute-domains", "gpus"]
    [plugin] = [
        d for d in docs if d["kind"] == "DaemonSet" and d["metadata"]["name"].endswith("-kubelet-plugin")
    ]
    assert plugin["spec"]["updateStrategy"]["rollingUpdate"] == {"maxUnavailable": "25%"}


def test_the_exporter_runs_in_dra_mode_as_the_chart_model_predicts(
    charted: list[tuple[Release, list[dict[str, Any]]]], helm: Helm, rendered: Rendered
) -> None:
    from gpuplatform.charts.model import render_gpu_operator
    from gpuplatform.versions import DCGM_EXPORTER_DRA_ENV

    checked = 0
    for r, docs in charted:
        if r.chart != "gpu-operator":
            continue
        # the ClusterPolicy the operator reads: `dcgmExporter.env` reaches the exporter's container
        # (controllers/object_controls.go, v26.3.1)
        [policy] = [d for d in docs if d["kind"] == "ClusterPolicy"]
        env = {e["name"]: e["value"] for e in policy["spec"]["dcgmExporter"].get("env") or []}
        assert env.get(DCGM_EXPORTER_DRA_ENV) == "true", f"{r.platform}/{r.wave.name}"
        assert render_gpu_operator(r.facts.version, r.values).exporter_dra
        # the model follows helm when the team turns it off
        off = copy.deepcopy(r.values)
        off["dcgmExporter"]["env"] = [{"name": DCGM_EXPORTER_DRA_ENV, "value": "false"}]
        kube = rendered.plans[r.platform].platform.kubernetes.version
        out = helm.template(r.folder, off, release=r.release, namespace=r.namespace, kube_version=kube)
        assert not isinstance(out, str), out
        [policy] = [d for d in out if d["kind"] == "ClusterPolicy"]
        assert policy["spec"]["dcgmExporter"]["env"] == off["dcgmExporter"]["env"]
        assert not render_gpu_operator(r.facts.version, off).exporter_dra
        checked += 1
    assert checked


@pytest.mark.parametrize(
    "daemonsets",
    [{}, {"updateStrategy": "OnDelete"}, {"rollingUpdate": {"maxUnavailable": "10%"}}],
)
def test_the_operand_roll_is_read_as_helm_gives_it_to_the_operator(
    charted: list[tuple[Release, list[dict[str, Any]]]],
    helm: Helm,
    rendered: Rendered,
    daemonsets: dict[str, Any],
) -> None:
    """`OperatorOutput.operand_update` (the runbook's exporter wait, the rehearsal's operand
    DaemonSets) is the ClusterPolicy's `daemonsets.updateStrategy` and `rollingUpdate`."""
    from gpuplatform.charts.model import render_gpu_operator

    r = next(r for r, _ in charted if r.chart == "gpu-operator")
    values = copy.deepcopy(r.values)
    values["daemonsets"] = {**(values.get("daemonsets") or {}), **daemonsets}
    kube = rendered.plans[r.platform].platform.kubernetes.version
    out = helm.template(r.folder, values, release=r.release, namespace=r.namespace, kube_version=kube)
    assert not isinstance(out, str), out
    [policy] = [d for d in out if d["kind"] == "ClusterPolicy"]
    spec = policy["spec"]["daemonsets"]
    assert render_gpu_operator(r.facts.version, values).operand_update == (
        spec["updateStrategy"],
        spec["rollingUpdate"]["maxUnavailable"],
    )


#: ClusterPolicy `spec` section -> the operand it deploys (templates/clusterpolicy.yaml, v26.3.1).
_POLICY_OPERANDS = {
    "driver": "driver",
    "toolkit": "container-toolkit",
    "devicePlugin": "device-plugin",
    "gfd": "gpu-feature-discovery",
    "dcgm": "dcgm",
    "dcgmExporter": "dcgm-exporter",
    "migManager": "mig-manager",
    "nodeStatusExporter": "node-status-exporter",
}


@pytest.mark.parametrize(
    "switches",
    [
        {},
        {"dcgm": True, "migManager": False},
        {"driver": False, "toolkit": False, "nodeStatusExporter": True},
    ],
)
def test_the_enabled_operands_are_the_ones_the_cluster_policy_enables(
    charted: list[tuple[Release, list[dict[str, Any]]]],
    helm: Helm,
    rendered: Rendered,
    switches: dict[str, bool],
) -> None:
    """`OperatorOutput.operands`, which the gates' operand facts and the rehearsal's operand
    DaemonSets read, is what the rendered ClusterPolicy turns on (the validator always runs)."""
    from gpuplatform.charts.model import render_gpu_operator

    r = next(r for r, _ in charted if r.chart == "gpu-operator")
    values = copy.deepcopy(r.values)
    for key, on in switches.items():
        values[key] = {**(values.get(key) or {}), "enabled": on}
    kube = rendered.plans[r.platform].platform.kubernetes.version
    out = helm.template(r.folder, values, release=r.release, namespace=r.namespace, kube_version=kube)
    assert not isinstance(out, str), out
    [policy] = [d for d in out if d["kind"] == "ClusterPolicy"]
    enabled = {name for key, name in _POLICY_OPERANDS.items() if policy["spec"][key].get("enabled")}
    assert set(render_gpu_operator(r.facts.version, values).operands) == enabled | {"operator-validator"}
