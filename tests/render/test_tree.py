"""The file tree: naming, folders per layer, kustomizations in apply order, engine isolation."""

from __future__ import annotations

from collections import defaultdict
from pathlib import PurePosixPath
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gpuplatform.model import Platform
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.kustomize_paths import join_path
from gpuplatform.render.meta import k8s_object, order_keys
from gpuplatform.render.nodes import NODES_ROOT
from gpuplatform.render.tree import KIND_RANK, Tree, file_name, render_tree, sort_objects


def test_file_names() -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-01"}}
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "r", "namespace": "ns"},
    }
    assert file_name(node) == "node_gpu-01.yaml"
    assert file_name(role) == "role_ns_r.yaml"


def test_kind_rank_orders_namespaces_first_and_jobs_last() -> None:
    kinds = ["Job", "ResourceClaimTemplate", "Role", "Namespace", "ResourceQuota", "Unknown"]
    objs = [{"kind": k, "metadata": {"name": "x"}} for k in kinds]
    assert [o["kind"] for o in sort_objects(objs)] == [
        "Namespace",
        "ResourceQuota",
        "Role",
        "ResourceClaimTemplate",
        "Job",
        "Unknown",
    ]
    assert KIND_RANK["ValidatingAdmissionPolicy"] < KIND_RANK["ValidatingAdmissionPolicyBinding"]


def test_order_keys_puts_kubernetes_keys_first() -> None:
    obj = order_keys(
        {
            "spec": {},
            "zeta": 1,
            "kind": "K",
            "metadata": {"labels": {"b": "1", "a": "2"}, "name": "n"},
            "apiVersion": "v1",
        }
    )
    assert list(obj) == ["apiVersion", "kind", "metadata", "spec", "zeta"]
    assert list(obj["metadata"]) == ["name", "labels"]
    assert list(obj["metadata"]["labels"]) == ["a", "b"]


_KEYS = st.sampled_from(["spec", "data", "rules", "subjects", "roleRef", "zeta", "automount", "items"])
_NAMES = st.text("abz.-", min_size=1, max_size=3)


@settings(max_examples=100)
@given(
    body=st.dictionaries(_KEYS, st.integers()),
    labels=st.dictionaries(_NAMES, _NAMES),
    annotations=st.dictionaries(_NAMES, _NAMES),
    namespace=st.none() | _NAMES,
)
def test_k8s_object_is_built_in_order_keys_order(
    body: dict[str, int], labels: dict[str, str], annotations: dict[str, str], namespace: str | None
) -> None:
    # GIVEN any body, labels, annotations and namespace
    # WHEN an object is built
    obj = k8s_object(
        "v1", "K", "n", wave="w", namespace=namespace, labels=labels, annotations=annotations, **body
    )
    # THEN its keys, its metadata's keys, its labels and its annotations are in order_keys' order
    ordered = order_keys(obj)
    assert list(obj) == list(ordered)
    assert list(obj["metadata"]) == list(ordered["metadata"])
    for key in ("labels", "annotations"):
        assert list(obj["metadata"].get(key, {}).items()) == list(ordered["metadata"].get(key, {}).items())


def _first(tree: Tree, path: str) -> dict[str, Any]:
    content = tree.files.get(path)
    return content[0] if isinstance(content, list) else {}


def test_every_wave_folder_lists_exactly_its_files_and_subfolders(reference: Platform) -> None:
    tree = render_tree(plan_platform(reference))
    children: dict[str, set[str]] = defaultdict(set)
    for path in tree.files:
        p = PurePosixPath(path)
        if p.parts[0] != "waves":
            continue
        for depth in range(2, len(p.parts)):
            children["/".join(p.parts[:depth])].add(p.parts[depth])
    for folder, entries in children.items():
        if len(PurePosixPath(folder).parts) < 2 or (
            folder.endswith("/argocd") and len(PurePosixPath(folder).parts) == 3
        ):
            continue  # the wave's Argo CD entry lists the layers beside it (test_argo_entry_lists_every_layer)
        kustomization = tree.files[f"{folder}/kustomization.yaml"]
        assert isinstance(kustomization, list)
        if "helmCharts" in kustomization[0]:
            continue  # the Argo CD wrapper of the DRA chart: its Application's source, listed by no one
        listed = set(kustomization[0]["resources"])
        shared = {r for r in listed if r.startswith("../")}  # the nodes/ folders of 10-nodes
        assert all(_first(tree, f"{join_path(folder, r)}/kustomization.yaml") for r in shared), folder
        engines = {e for e in entries if e in ("flux", "argocd")}
        engines |= {e for e in entries if "helmCharts" in _first(tree, f"{folder}/{e}/kustomization.yaml")}
        assert listed - shared == entries - {"kustomization.yaml"} - engines, folder


def test_every_node_folder_lists_its_nodes_and_some_wave_names_it(reference: Platform) -> None:
    tree = render_tree(plan_platform(reference))
    folders = {p.rsplit("/", 1)[0] for p in tree.files if p.startswith(f"{NODES_ROOT}/")}
    named = {
        join_path(p.rsplit("/", 1)[0], str(r))
        for p, content in tree.files.items()
        if p.startswith("waves/") and p.endswith("/10-nodes/kustomization.yaml") and isinstance(content, list)
        for r in content[0]["resources"]
    }
    assert folders == named and len(folders) == 4  # two pools, each legacy and DRA
    for folder in folders:
        files = {p.rsplit("/", 1)[1] for p in tree.files if p.rsplit("/", 1)[0] == folder}
        assert set(_first(tree, f"{folder}/kustomization.yaml")["resources"]) == files - {
            "kustomization.yaml"
        }


def test_engine_objects_go_to_unlisted_engine_folders() -> None:
    tree = Tree("p")
    release = {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {"name": "r", "namespace": "n"},
    }
    app = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "a", "namespace": "argocd"},
    }
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}}
    entries = tree.add_folder("w/00-operators", [release, app, cm])
    assert entries == ["configmap_n_c.yaml"]
    assert set(tree.files) == {
        "w/00-operators/configmap_n_c.yaml",
        "w/00-operators/kustomization.yaml",
        "w/00-operators/flux/helmrelease_n_r.yaml",
        "w/00-operators/flux/kustomization.yaml",
        "w/00-operators/argocd/application_argocd_a.yaml",
        "w/00-operators/argocd/kustomization.yaml",
    }


def test_tenant_layer_is_split_by_namespace(reference: Platform) -> None:
    tree = render_tree(plan_platform(reference))
    layer = "waves/03-native-claim-pilot/40-tenants"
    assert tree.files[f"{layer}/kustomization.yaml"][0]["resources"] == ["gpu-dra-pilot"]  # type: ignore[index]
    assert f"{layer}/gpu-dra-pilot/namespace_gpu-dra-pilot.yaml" in tree.files


def test_handoff_folders_are_never_listed_by_a_kustomization(reference: Platform) -> None:
    tree = render_tree(plan_platform(reference))
    handoffs = [p for p in tree.files if p.startswith("handoff/")]
    assert handoffs and not [p for p in handoffs if p.endswith("kustomization.yaml")]


def test_argo_entry_lists_every_layer_and_the_argocd_engine_folders(reference: Platform) -> None:
    tree = render_tree(plan_platform(reference))
    [entry] = tree.files["waves/01-pilot-pool/argocd/kustomization.yaml"]  # type: ignore[misc]
    assert entry["resources"] == [
        "../00-operators",
        "../10-nodes",
        "../15-allocator-switch",
        "../20-device-classes",
        "../30-policy",
        "../40-tenants",
        "../50-gates",
        "../00-operators/argocd",
        "job_gpuplatform-gates_gpuplatform-hook-cleanup.yaml",
    ]
