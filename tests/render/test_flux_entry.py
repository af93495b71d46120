"""Flux's entry: bootstrap's GitRepository by default, a platform's own only when configured, and a
cluster entry that no wave changes."""

from __future__ import annotations

from gpuplatform.load.stacks import discover_stacks, load_stacks
from gpuplatform.model import Platform
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.flux_entry import (
    HELM_ACCOUNT,
    KUSTOMIZE_ACCOUNT,
    render_cluster_entry,
    render_cluster_source,
)
from gpuplatform.render.tree import render_tree
from tests.conftest import REPO


def _flux(platform: Platform) -> list[dict]:  # type: ignore[type-arg]
    tree = render_tree(plan_platform(platform))
    return [o for p, c in sorted(tree.files.items()) if p.startswith("delivery/flux/") for o in c]  # type: ignore[union-attr]


def _with(platform: Platform, **delivery: object) -> Platform:
    return platform.model_copy(update={"delivery": platform.delivery.model_copy(update=delivery)})


def test_the_chain_reads_bootstrap_s_git_repository_and_renders_none(reference: Platform) -> None:
    objects = _flux(reference)
    assert not [o for o in objects if o["kind"] == "GitRepository"]
    refs = {o["spec"]["sourceRef"]["name"] for o in objects if "spec" in o and "sourceRef" in o["spec"]}
    assert refs == {"flux-system"}


def test_a_configured_git_repository_comes_with_the_cluster_entry_and_is_read(reference: Platform) -> None:
    # GIVEN a platform with its own GitRepository on another branch than bootstrap's
    platform = _with(reference, flux_git_repository="gpu-platform", revision="staging")
    plan = plan_platform(platform)
    # THEN the cluster entry's file holds it, following the platform's branch
    repo = render_cluster_source(plan)
    assert repo is not None and repo["metadata"]["name"] == "gpu-platform"
    assert repo["spec"]["url"] == reference.delivery.repo_url
    assert repo["spec"]["ref"] == {"branch": "staging"}
    assert "gpuplatform.dev/wave" not in repo["metadata"]["labels"]
    # AND the entry and every Kustomization of the chain read it; the chain does not hold it (the
    # entry reads it before it has applied anything: held by the folder it applies, it would never exist)
    objects = _flux(platform)
    assert not [o for o in objects if o["kind"] == "GitRepository"]
    refs = {o["spec"]["sourceRef"]["name"] for o in objects if o["kind"] == "Kustomization" and "spec" in o}
    assert refs == {"gpu-platform"}
    assert render_cluster_entry(plan)["spec"]["sourceRef"] == {
        "kind": "GitRepository",
        "name": "gpu-platform",
    }


def test_without_its_own_git_repository_the_entry_file_holds_the_entry_only(reference: Platform) -> None:
    assert render_cluster_source(plan_platform(reference)) is None


def test_a_gate_that_timed_out_is_rechecked_within_a_minute(reference: Platform) -> None:
    chain = [o for o in _flux(reference) if o["kind"] == "Kustomization" and "spec" in o]
    assert chain and {k["spec"]["retryInterval"] for k in chain} == {"1m"}


def test_the_cluster_entry_names_no_wave_and_applies_the_delivery_folder(reference: Platform) -> None:
    entries = [
        render_cluster_entry(plan_platform(reference.model_copy(update={"active_wave": w.name})))
        for w in reference.waves
    ]
    assert all(e == entries[0] for e in entries)
    entry = entries[0]
    assert "gpuplatform.dev/wave" not in entry["metadata"]["labels"]
    assert entry["spec"]["path"] == "./dist/reference/delivery/flux"
    assert entry["spec"]["sourceRef"] == {"kind": "GitRepository", "name": "flux-system"}
    assert "wait" not in entry["spec"]


def test_a_wave_change_prunes_the_previous_wave_s_gate_jobs_and_facts(reference: Platform) -> None:
    # GIVEN the Flux chain of two consecutive waves
    def gates(wave: str) -> tuple[set[str], set[str]]:
        tree = render_tree(plan_platform(reference.model_copy(update={"active_wave": wave})))
        chain = [o for p, c in tree.files.items() if p.startswith("delivery/flux/") for o in c]  # type: ignore[union-attr]
        gate_ks = [k for k in chain if "metadata" in k and "gates-" in k["metadata"]["name"]]
        assert gate_ks and all(k["spec"]["prune"] is True for k in gate_ks)
        folders = [k["spec"]["path"].removeprefix("./dist/reference/") for k in gate_ks]
        objects = [o for p, c in tree.files.items() if any(p.startswith(f + "/") for f in folders) for o in c]  # type: ignore[union-attr]
        objects = [o for o in objects if "metadata" in o]
        jobs = {o["metadata"]["name"] for o in objects if o["kind"] == "Job"}
        facts = {o["metadata"]["name"] for o in objects if o["kind"] == "ConfigMap"}
        return jobs, facts

    jobs_a, facts_a = gates("pilot-pool")
    jobs_b, _ = gates("driver-validation")
    # THEN each gate Job's facts ConfigMap is in the same pruned folder, and no Job of the first
    # wave is in the second wave's inventory: Flux prunes it on the change
    assert jobs_a and jobs_a <= facts_a
    assert not jobs_a & jobs_b


def test_every_kustomization_and_helm_release_names_the_account_it_reconciles_as() -> None:
    # GIVEN every Flux object every bundled platform renders (and the cluster entry)
    loaded = load_stacks(discover_stacks(REPO / "stacks"))
    for lp in loaded:
        if "flux" not in lp.platform.delivery.engines:
            continue
        plan = plan_platform(lp.platform)
        objects = [o for c in render_tree(plan).files.values() if isinstance(c, list) for o in c]
        objects.append(render_cluster_entry(plan))
        kinds = [o for o in objects if o["kind"] in ("Kustomization", "HelmRelease") and "spec" in o]
        assert kinds
        # THEN each names its account, so the lockdown's --default-service-account never applies:
        # the platform's the controllers' own, a tenant's its own ServiceAccount
        for obj in kinds:
            account = obj["spec"].get("serviceAccountName")
            assert account, f"{lp.platform.name}: {obj['kind']}/{obj['metadata']['name']}"
            if obj["metadata"]["namespace"] == lp.platform.delivery.flux_namespace:
                wanted = KUSTOMIZE_ACCOUNT if obj["kind"] == "Kustomization" else HELM_ACCOUNT
                assert account == wanted, obj["metadata"]["name"]
