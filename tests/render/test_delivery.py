"""Entry points: Flux chains layers forward only, Argo sync-waves rise with the layer, least privilege."""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

from gpuplatform.commands.synth import render_files
from gpuplatform.load.stacks import LoadedPlatform
from gpuplatform.model import Platform
from gpuplatform.plan.sync_order import SYNC_UNITS, unit_of_folder
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.tree import render_tree


def _delivery(reference: Platform, engine: str) -> list[dict]:  # type: ignore[type-arg]
    tree = render_tree(plan_platform(reference))
    return [
        o
        for p, c in sorted(tree.files.items())
        if p.startswith(f"delivery/{engine}/") and isinstance(c, list)
        for o in c
    ]


def test_flux_kustomizations_chain_in_the_order_of_the_sync_units(reference: Platform) -> None:
    kustomizations = [o for o in _delivery(reference, "flux") if o["kind"] == "Kustomization" and "spec" in o]
    by_name = {k["metadata"]["name"]: k for k in kustomizations}
    layer_of = {
        name: k["spec"]["path"].split("/waves/03-native-claim-pilot/")[1] for name, k in by_name.items()
    }
    assert all(
        k["spec"]["path"].startswith("./dist/reference/waves/03-native-claim-pilot/") for k in kustomizations
    )
    rank = {u.id: i for i, u in enumerate(SYNC_UNITS)}
    for name, k in by_name.items():
        for dep in k["spec"].get("dependsOn", []):
            here, there = unit_of_folder(layer_of[name]).id, unit_of_folder(layer_of[dep["name"]]).id
            assert rank[there] <= rank[here], f"{name} depends on the later {dep['name']}"
        releases = layer_of[name] == "00-operators/flux"
        assert k["spec"]["wait"] is True and k["spec"]["prune"] is True
        assert k["spec"]["timeout"] == ("25m" if releases else "15m"), (
            "the releases wait for the driver's rollout"
        )
    roots = [n for n, k in by_name.items() if "dependsOn" not in k["spec"]]
    assert roots == ["reference-gates-pre"]
    depended = {d["name"] for k in kustomizations for d in k["spec"].get("dependsOn", [])}
    assert set(by_name) - depended == {"reference-gates-post"}
    chain = ["reference-gates-pre"]
    while len(chain) < len(by_name):
        chain.append(
            next(n for n, k in by_name.items() if {"name": chain[-1]} in k["spec"].get("dependsOn", []))
        )
    assert [layer_of[n] for n in chain] == [
        "50-gates/pre",
        "15-allocator-switch/release",
        "00-operators",
        "00-operators/flux",
        "10-nodes",
        "15-allocator-switch/enable",
        "20-device-classes",
        "30-policy",
        "40-tenants",
        "50-gates/post",
    ]


def test_argo_sync_waves_follow_the_sync_units(reference: Platform) -> None:
    tree = render_tree(plan_platform(reference))
    for path, content in tree.files.items():
        parts = path.split("/")
        if parts[0] != "waves" or not isinstance(content, list) or path.endswith("kustomization.yaml"):
            continue
        for obj in content:
            annotations = obj["metadata"].get("annotations", {})
            if annotations.get("argocd.argoproj.io/hook", "Sync") != "Sync" or obj["apiVersion"].startswith(
                ("helm.", "source.")
            ):
                continue
            folder = "/".join(p for p in parts[2:-1] if p not in ("argocd",))
            assert annotations["argocd.argoproj.io/sync-wave"] == str(unit_of_folder(folder).argo_wave), path


def test_gate_jobs_are_argo_hooks_recreated_before_each_run(reference: Platform) -> None:
    tree = render_tree(plan_platform(reference))
    jobs = [
        c[0]
        for p, c in tree.files.items()
        if "/50-gates/" in p and isinstance(c, list) and c[0]["kind"] == "Job"
    ]
    assert jobs
    for job in jobs:
        hook = job["metadata"]["annotations"]["argocd.argoproj.io/hook"]
        phase = job["metadata"]["labels"]["gpuplatform.dev/gate-phase"]
        assert hook == {"pre": "PreSync", "post": "PostSync"}[phase]
        assert job["metadata"]["annotations"]["argocd.argoproj.io/hook-delete-policy"] == "BeforeHookCreation"
        pod = job["spec"]["template"]["spec"]
        if "gpuplatform.dev/gate" in job["metadata"]["labels"]:
            assert pod["serviceAccountName"] == "gpuplatform-gates" and pod["automountServiceAccountToken"]
        else:  # a validation workload: no API access at all
            assert "serviceAccountName" not in pod and pod["automountServiceAccountToken"] is False


def test_app_project_allows_nodes_namespaces_and_crds_only_by_name(reference: Platform) -> None:
    [project] = [o for o in _delivery(reference, "argocd") if o["kind"] == "AppProject"]
    whitelist = project["spec"]["clusterResourceWhitelist"]
    assert [w for w in whitelist if w["kind"] == "Node"] == [
        {"group": "", "kind": "Node", "name": "gpu-dra-01"},
        {"group": "", "kind": "Node", "name": "gpu-legacy-01"},
    ]
    assert {w.get("name") for w in whitelist if w["kind"] == "CustomResourceDefinition"} == {
        "clusterpolicies.nvidia.com",
        "nvidiadrivers.nvidia.com",
        "nodefeatures.nfd.k8s-sigs.io",
        "nodefeaturerules.nfd.k8s-sigs.io",
        "nodefeaturegroups.nfd.k8s-sigs.io",
        "computedomains.resource.nvidia.com",
        "computedomaincliques.resource.nvidia.com",
    }
    assert all(
        "name" in w for w in whitelist if w["kind"] in ("Node", "Namespace", "CustomResourceDefinition")
    )
    assert {"group": "resource.k8s.io", "kind": "DeviceClass"} in whitelist
    assert {"group": "nvidia.com", "kind": "ClusterPolicy"} in whitelist
    assert not [w for w in whitelist if w["kind"] == "ResourceSlice"]
    assert {"group": "argoproj.io", "kind": "Application"} in project["spec"]["namespaceResourceWhitelist"]


def test_a_chart_toggle_changes_the_whitelist(reference: Platform) -> None:
    # GIVEN team values that turn the chart's NFD off
    platform = reference.model_copy(
        update={
            "gpu_operator": reference.gpu_operator.model_copy(update={"values": {"nfd": {"enabled": False}}})
        }
    )
    [project] = [o for o in _delivery(platform, "argocd") if o["kind"] == "AppProject"]
    names = {w.get("name") for w in project["spec"]["clusterResourceWhitelist"]}
    # THEN the NFD CRDs are no longer permitted
    assert "nodefeatures.nfd.k8s-sigs.io" not in names
    assert "clusterpolicies.nvidia.com" in names


def test_gate_identity_is_read_only(reference: Platform) -> None:
    tree = render_tree(plan_platform(reference))
    [role] = tree.files["delivery/gates/clusterrole_gpuplatform-gates-reference.yaml"]  # type: ignore[misc]
    assert {verb for rule in role["rules"] for verb in rule["verbs"]} == {"list"}


def test_changing_the_active_wave_changes_only_delivery_the_overview_and_the_lock(
    reference_loaded: list[LoadedPlatform],
) -> None:
    loaded = reference_loaded[0]
    moved = loaded.platform.model_copy(update={"active_wave": "compatibility-bridge"})
    doc = json.loads(json.dumps(loaded.document))
    doc["spec"]["activeWave"] = "compatibility-bridge"
    before = render_files(loaded)
    after = render_files(LoadedPlatform(moved, loaded.source, loaded.overlays, doc))
    changed = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
    assert changed
    assert "README.md" in changed, "the overview marks the active wave"
    assert all(p.startswith("delivery/") or p in ("README.md", "gpuplatform.lock.json") for p in changed), (
        changed
    )


def test_a_stack_with_several_argo_platforms_gets_the_same_applicationsets_in_each_tree(
    reference_loaded: list[LoadedPlatform],
) -> None:
    from gpuplatform.commands.synth import render_all

    rendered = render_all(reference_loaded)
    folder = "delivery/argocd-applicationset"
    files = sorted(p for p in rendered["reference"] if p.startswith(folder))
    assert files == sorted(p for p in rendered["reference-staging"] if p.startswith(folder))
    assert all(rendered["reference"][p] == rendered["reference-staging"][p] for p in files)
    import yaml

    automated = yaml.safe_load(rendered["reference"][f"{folder}/applicationset_argocd_reference.yaml"])
    elements = automated["spec"]["generators"][0]["list"]["elements"]
    assert [(e["app"], e["server"], e["path"]) for e in elements] == [
        ("reference", "https://kubernetes.default.svc", "dist/reference/waves/03-native-claim-pilot/argocd"),
        ("reference-gates", "https://kubernetes.default.svc", "dist/reference/delivery/gates"),
        ("reference-sync", "https://kubernetes.default.svc", "dist/reference/delivery/argocd-sync/cluster"),
        (
            "reference-staging",
            "https://staging-api.example.com:6443",
            "dist/reference-staging/waves/02-driver-validation/argocd",
        ),
        (
            "reference-staging-gates",
            "https://staging-api.example.com:6443",
            "dist/reference-staging/delivery/gates",
        ),
        (
            "reference-staging-sync",
            "https://staging-api.example.com:6443",
            "dist/reference-staging/delivery/argocd-sync/cluster",
        ),
        (
            "reference-staging-sync-argocd",
            "https://kubernetes.default.svc",
            "dist/reference-staging/delivery/argocd-sync/argocd",
        ),
    ]
    manual = yaml.safe_load(rendered["reference"][f"{folder}/applicationset_argocd_reference-apps.yaml"])
    assert "automated" not in manual["spec"]["template"]["spec"]["syncPolicy"]
    assert [
        (e["app"], e["server"], e["namespace"]) for e in manual["spec"]["generators"][0]["list"]["elements"]
    ] == [("reference-staging-apps", "https://kubernetes.default.svc", "argocd")]
    # every member's AppProject travels with the sets
    assert f"{folder}/appproject_argocd_reference.yaml" in files
    assert f"{folder}/appproject_argocd_reference-staging.yaml" in files
    kustomization = yaml.safe_load(rendered["reference"]["delivery/argocd/kustomization.yaml"])
    assert "../argocd-applicationset" not in kustomization["resources"]


def _entry(loaded: list[LoadedPlatform], name: str) -> dict[str, dict]:  # type: ignore[type-arg]
    from gpuplatform.commands.synth import render_trees

    tree = render_trees(loaded)[name]
    return {
        o["metadata"]["name"]: o
        for p, c in tree.files.items()
        if p.startswith("delivery/argocd/") and isinstance(c, list)
        for o in c
        if o["kind"] == "Application"
    }


def test_a_remote_cluster_keeps_its_applications_on_the_managing_cluster(
    reference_loaded: list[LoadedPlatform],
) -> None:
    from gpuplatform.commands.synth import render_trees

    apps = _entry(reference_loaded, "reference-staging")
    staging = "https://staging-api.example.com:6443"
    # the wave and the gate identity go to the staging cluster
    assert apps["reference-staging"]["spec"]["destination"]["server"] == staging
    assert apps["reference-staging-gates"]["spec"]["destination"] == {
        "server": staging,
        "namespace": "gpuplatform-gates",
    }
    # the child Applications are created where Argo CD runs, synced by hand after the pre gates
    children = apps["reference-staging-apps"]
    assert children["spec"]["destination"] == {
        "server": "https://kubernetes.default.svc",
        "namespace": "argocd",
    }
    assert "automated" not in children["spec"]["syncPolicy"]
    tree = render_trees(reference_loaded)["reference-staging"]
    wave = "waves/02-driver-validation"
    assert tree.files[f"{wave}/argocd-apps/kustomization.yaml"][0]["resources"] == ["../00-operators/argocd"]  # type: ignore[index]
    assert "../00-operators/argocd" not in tree.files[f"{wave}/argocd/kustomization.yaml"][0]["resources"]  # type: ignore[index]
    # each child deploys its chart to the staging cluster
    for path, content in tree.files.items():
        if path.startswith(f"{wave}/00-operators/argocd/application_"):
            assert content[0]["spec"]["destination"]["server"] == staging  # type: ignore[index]


def test_a_local_cluster_holds_its_child_applications_in_the_wave(
    reference_loaded: list[LoadedPlatform],
) -> None:
    from gpuplatform.commands.synth import render_trees

    apps = _entry(reference_loaded, "reference")
    assert set(apps) == {"reference", "reference-gates", "reference-sync"}
    tree = render_trees(reference_loaded)["reference"]
    assert (
        "../00-operators/argocd"
        in tree.files["waves/03-native-claim-pilot/argocd/kustomization.yaml"][0]["resources"]
    )  # type: ignore[index]
    assert not [p for p in tree.files if "/argocd-apps/" in p]


def _generate(appset: dict[str, Any]) -> list[dict[str, Any]]:
    """What the ApplicationSet controller's list generator makes of the template: Go templates
    (`{{.key}}`) with `missingkey=error`, a key an element lacks failing the set (KeyError here)."""
    assert appset["spec"]["goTemplate"] is True
    assert appset["spec"]["goTemplateOptions"] == ["missingkey=error"]
    out = []
    for element in appset["spec"]["generators"][0]["list"]["elements"]:
        text = json.dumps(appset["spec"]["template"])
        text = re.sub(r"\{\{\s*\.(\w+)\s*\}\}", lambda m, e=element: str(e[m.group(1)]), text)
        assert "{{" not in text, text
        app = json.loads(text)
        app["metadata"]["namespace"] = appset["metadata"]["namespace"]
        out.append({"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", **app})
    return out


def test_applicationsets_generate_exactly_the_entry_applications_field_by_field(
    reference_loaded: list[LoadedPlatform],
) -> None:
    # GIVEN every member's own Argo CD entry Applications
    from gpuplatform.commands.synth import render_all

    rendered = render_all(reference_loaded)
    entries = {}
    for files in rendered.values():
        for path, text in files.items():
            if path.startswith("delivery/argocd/application_"):
                app = yaml.safe_load(text)
                entries[app["metadata"]["name"]] = app
    # WHEN the ApplicationSets generate theirs
    folder = "delivery/argocd-applicationset"
    generated = {}
    for path, text in rendered["reference"].items():
        if path.startswith(f"{folder}/applicationset_"):
            for app in _generate(yaml.safe_load(text)):
                generated[app["metadata"]["name"]] = app
    # THEN they are the same Applications: labels (managed-by), sync policy (retry) and all
    assert sorted(generated) == sorted(entries)
    for name, app in entries.items():
        assert generated[name] == app, name
        assert app["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "gpuplatform"
    assert generated["reference"]["spec"]["syncPolicy"]["retry"]["limit"] == -1


def test_the_wave_application_targets_a_namespace_that_exists_in_every_wave(reference: Platform) -> None:
    """In `baseline` the DRA driver's namespace does not exist yet: the entry targets the gates' namespace,
    which `delivery/gates/` creates before any wave's hooks run."""
    for wave in [w.name for w in reference.waves]:
        tree = render_tree(plan_platform(reference.model_copy(update={"active_wave": wave})))
        created = {
            o["metadata"]["name"]
            for p, c in tree.files.items()
            if p.startswith("delivery/gates/") and isinstance(c, list)
            for o in c
            if o["kind"] == "Namespace"
        }
        [app] = [
            o
            for p, c in tree.files.items()
            if p.startswith("delivery/argocd/") and isinstance(c, list)
            for o in c
            if o["kind"] == "Application" and o["metadata"]["name"] == reference.name
        ]
        assert app["spec"]["destination"]["namespace"] in created, wave
        assert app["spec"]["destination"]["namespace"] != reference.dra_driver.namespace


def test_sync_failed_notifications_subscribe_the_project_only_when_asked(reference: Platform) -> None:
    def projects(platform: Platform) -> list[dict[str, Any]]:
        tree = render_tree(plan_platform(platform))
        return [
            o
            for p, c in tree.files.items()
            if p.startswith("delivery/argocd") and isinstance(c, list)
            for o in c
            if o["kind"] == "AppProject"
        ]

    assert all(
        not any(k.startswith("notifications.argoproj.io/") for k in o["metadata"].get("annotations", {}))
        for o in projects(reference)
    )
    asked = reference.model_copy(
        update={
            "delivery": reference.delivery.model_copy(
                update={"sync_failed_notifications": {"slack": "gpu-oncall;gpu-leads"}}
            )
        }
    )
    [project] = [o for o in projects(asked) if o["metadata"]["name"] == reference.name][:1]
    assert project["metadata"]["annotations"] == {
        "notifications.argoproj.io/subscribe.on-sync-failed.slack": "gpu-oncall;gpu-leads"
    }


def test_a_member_that_turns_prune_off_gets_a_set_of_its_own_that_generates_its_applications(
    reference_loaded: list[LoadedPlatform],
) -> None:
    # GIVEN reference-staging's Argo CD without automated prune (an ApplicationSet has one syncPolicy)
    from gpuplatform.commands.synth import render_all

    members = []
    for lp in reference_loaded:
        if lp.platform.name == "reference-staging":
            delivery = lp.platform.delivery.model_copy(update={"argocd_prune": False})
            lp = LoadedPlatform(
                lp.platform.model_copy(update={"delivery": delivery}), lp.source, lp.overlays, lp.document
            )
        members.append(lp)
    rendered = render_all(members)
    folder = "delivery/argocd-applicationset"
    generated = {}
    for path, text in rendered["reference"].items():
        if path.startswith(f"{folder}/applicationset_"):
            for app in _generate(yaml.safe_load(text)):
                generated[app["metadata"]["name"]] = app
    # THEN its Applications come from `<stack>-noprune`, and every set generates the entry Applications
    assert f"{folder}/applicationset_argocd_reference-noprune.yaml" in rendered["reference"]
    for files in rendered.values():
        for path, text in files.items():
            if path.startswith("delivery/argocd/application_"):
                app = yaml.safe_load(text)
                assert generated[app["metadata"]["name"]] == app
    assert generated["reference-staging"]["spec"]["syncPolicy"]["automated"] == {
        "prune": False,
        "selfHeal": True,
    }
    assert generated["reference"]["spec"]["syncPolicy"]["automated"] == {"prune": True, "selfHeal": True}
