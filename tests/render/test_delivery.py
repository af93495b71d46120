"""Entry points: Flux chains layers forward only, Argo sync-waves rise with the layer, least privilege."""

from __future__ import annotations

import json

from gpuplatform.load.stacks import LoadedPlatform
from gpuplatform.model import Platform
from gpuplatform.output.synth import render_files
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


def test_flux_kustomizations_chain_forward_from_pre_gates_to_post_gates(reference: Platform) -> None:
    kustomizations = [o for o in _delivery(reference, "flux") if o["kind"] == "Kustomization" and "spec" in o]
    by_name = {k["metadata"]["name"]: k for k in kustomizations}
    layer_of = {
        name: k["spec"]["path"].split("/waves/03-native-claim-pilot/")[1] for name, k in by_name.items()
    }
    assert all(
        k["spec"]["path"].startswith("./dist/reference/waves/03-native-claim-pilot/") for k in kustomizations
    )
    order = {"50-gates/pre": -1, "50-gates/post": 99}
    for name, k in by_name.items():
        rank = order.get(layer_of[name], int(layer_of[name][:2]))
        for dep in k["spec"].get("dependsOn", []):
            dep_rank = order.get(layer_of[dep["name"]], int(layer_of[dep["name"]][:2]))
            assert dep_rank <= rank, f"{name} depends on the later {dep['name']}"
        assert k["spec"]["wait"] is True and k["spec"]["prune"] is True and k["spec"]["timeout"] == "15m"
    roots = [n for n, k in by_name.items() if "dependsOn" not in k["spec"]]
    assert roots == ["reference-gates-pre"]
    depended = {d["name"] for k in kustomizations for d in k["spec"].get("dependsOn", [])}
    assert set(by_name) - depended == {"reference-gates-post"}


def test_argo_sync_waves_increase_with_the_layer(reference: Platform) -> None:
    tree = render_tree(plan_platform(reference))
    for path, content in tree.files.items():
        parts = path.split("/")
        if parts[0] != "waves" or not isinstance(content, list) or path.endswith("kustomization.yaml"):
            continue
        for obj in content:
            annotations = obj["metadata"].get("annotations", {})
            if "argocd.argoproj.io/hook" in annotations or obj["apiVersion"].startswith(("helm.", "source.")):
                continue
            assert annotations["argocd.argoproj.io/sync-wave"] == str(int(parts[2][:2]) // 10), path


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


def test_app_project_allows_nodes_only_by_name(reference: Platform) -> None:
    [project] = [o for o in _delivery(reference, "argocd") if o["kind"] == "AppProject"]
    whitelist = project["spec"]["clusterResourceWhitelist"]
    assert [w for w in whitelist if w["kind"] == "Node"] == [
        {"group": "", "kind": "Node", "name": "gpu-legacy-01"},
        {"group": "", "kind": "Node", "name": "gpu-dra-01"},
    ]
    assert {"group": "resource.k8s.io", "kind": "DeviceClass"} in whitelist
    assert not [w for w in whitelist if w["kind"] in ("ResourceSlice", "CustomResourceDefinition")]


def test_gate_identity_is_read_only(reference: Platform) -> None:
    tree = render_tree(plan_platform(reference))
    [role] = tree.files["delivery/gates/clusterrole_gpuplatform-gates-reference.yaml"]  # type: ignore[misc]
    assert {verb for rule in role["rules"] for verb in rule["verbs"]} == {"list"}


def test_changing_the_active_wave_changes_only_delivery_and_the_lock(
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
    assert all(p.startswith("delivery/") or p == "gpuplatform.lock.json" for p in changed), changed


def test_a_stack_with_several_argo_platforms_gets_one_applicationset_in_each_tree(
    reference_loaded: list[LoadedPlatform],
) -> None:
    from gpuplatform.output.synth import render_all

    rendered = render_all(reference_loaded)
    path = "delivery/argocd-applicationset/applicationset_argocd_reference.yaml"
    assert rendered["reference"][path] == rendered["reference-staging"][path]
    import yaml

    appset = yaml.safe_load(rendered["reference"][path])
    elements = appset["spec"]["generators"][0]["list"]["elements"]
    assert [(e["name"], e["server"], e["path"]) for e in elements] == [
        ("reference", "https://kubernetes.default.svc", "dist/reference/waves/03-native-claim-pilot/argocd"),
        (
            "reference-staging",
            "https://staging-api.example.com:6443",
            "dist/reference-staging/waves/02-driver-validation/argocd",
        ),
    ]
    kustomization = yaml.safe_load(rendered["reference"]["delivery/argocd/kustomization.yaml"])
    assert "../argocd-applicationset" not in kustomization["resources"]
