"""Impersonation: the AppProject names, for every destination cluster, a ServiceAccount that the
folder applied to that cluster creates, allowed what the platform syncs there and nothing more."""

from __future__ import annotations

from typing import Any

import pytest

from gpuplatform.load.stacks import LoadedPlatform
from gpuplatform.model.platform import IN_CLUSTER
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.delivery import ArgoInstalls
from gpuplatform.render.sync_identity import SYNC_FOLDER, held_rules, plural
from gpuplatform.render.tree import render_tree

Obj = dict[str, Any]


def _objects(files: dict[str, Any], prefix: str) -> list[Obj]:
    """The objects under `prefix` that Argo CD applies (Flux's folders left out)."""
    found = [
        o
        for p, c in files.items()
        if p.startswith(prefix) and "/flux/" not in p and isinstance(c, list)
        for o in c
    ]
    return [o for o in found if o["kind"] != "Kustomization" or "metadata" in o]


def _allows(rules: list[Obj], group: str, kind: str, verb: str, name: str) -> bool:
    """RBAC's rule matching for one request (no wildcards: the rendered rules use none)."""
    return any(
        group in r["apiGroups"]
        and plural(kind) in r["resources"]
        and verb in r["verbs"]
        and ("resourceNames" not in r or name in r["resourceNames"])
        for r in rules
    )


@pytest.fixture(scope="module", params=["reference", "reference-staging"])
def rendered(request: pytest.FixtureRequest, reference_loaded: list[LoadedPlatform]) -> tuple[Any, Any]:
    loaded = next(p for p in reference_loaded if p.platform.name == request.param)
    plan = plan_platform(loaded.platform)
    return plan, render_tree(plan).files


def test_every_destination_server_maps_to_an_account_its_cluster_folder_creates(
    rendered: tuple[Any, Any],
) -> None:
    plan, files = rendered
    d = plan.platform.delivery
    (project,) = [o for o in _objects(files, "delivery/argocd/") if o["kind"] == "AppProject"]
    folder = {IN_CLUSTER: f"{SYNC_FOLDER}/argocd/", d.cluster_server: f"{SYNC_FOLDER}/cluster/"}
    for entry in project["spec"]["destinationServiceAccounts"]:
        ns, name = entry["defaultServiceAccount"].split(":")
        objects = _objects(files, folder[entry["server"]])
        kinds = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objects}
        assert ("ServiceAccount", ns, name) in kinds, entry
        impersonate = [
            r for o in objects if o["kind"] == "Role" for r in o["rules"] if "impersonate" in r["verbs"]
        ]
        assert impersonate == [
            {
                "apiGroups": [""],
                "resources": ["serviceaccounts"],
                "resourceNames": [name],
                "verbs": ["impersonate"],
            }
        ]
        assert entry["defaultServiceAccount"] != f"{d.argocd_namespace}:argocd-application-controller"


def test_the_cluster_account_may_sync_every_object_and_delete_none_it_must_keep(
    rendered: tuple[Any, Any],
) -> None:
    plan, files = rendered
    remote = plan.platform.delivery.remote
    (role,) = [o for o in _objects(files, f"{SYNC_FOLDER}/cluster/") if o["kind"] == "ClusterRole"]
    rules = role["rules"]
    synced = [
        o
        for o in _objects(files, "waves/") + _objects(files, "delivery/gates/")
        if o["kind"] != "Kustomization" and not (remote and o["apiVersion"].startswith("argoproj.io/"))
    ]
    assert synced
    for obj in synced:
        api, kind, name = obj["apiVersion"], obj["kind"], obj["metadata"]["name"]
        group = api.rsplit("/", 1)[0] if "/" in api else ""
        assert _allows(rules, group, kind, "patch", name), (kind, name)
        keep = "Delete=false" in (obj["metadata"].get("annotations") or {}).get(
            "argocd.argoproj.io/sync-options", ""
        )
        assert _allows(rules, group, kind, "delete", name) is (not keep), (kind, name)
        if kind == "Node":
            assert not _allows(rules, group, kind, "create", name)
        else:
            assert _allows(rules, group, kind, "create", name), (kind, name)
    assert not any("*" in r["verbs"] or "*" in r["resources"] or "*" in r["apiGroups"] for r in rules)


def test_a_remote_platforms_argocd_account_manages_only_its_child_applications(
    reference_loaded: list[LoadedPlatform],
) -> None:
    loaded = next(p for p in reference_loaded if p.platform.name == "reference-staging")
    files = render_tree(plan_platform(loaded.platform)).files
    objects = _objects(files, f"{SYNC_FOLDER}/argocd/")
    assert {o["kind"] for o in objects} == {"ServiceAccount", "Role", "RoleBinding"}
    (role,) = [
        o for o in objects if o["kind"] == "Role" and o["metadata"]["name"] == "reference-staging-sync"
    ]
    assert {g for r in role["rules"] for g in r["apiGroups"]} == {"argoproj.io"}
    assert _allows(
        role["rules"], "argoproj.io", "Application", "delete", "reference-staging-dra-driver-nvidia-gpu"
    )
    assert not _allows(
        role["rules"], "argoproj.io", "Application", "delete", "reference-staging-gpu-operator"
    )


def test_plural_follows_the_api_servers_default() -> None:
    assert [plural(k) for k in ("Node", "ValidatingAdmissionPolicy", "ClusterPolicy", "Ingress")] == [
        "nodes",
        "validatingadmissionpolicies",
        "clusterpolicies",
        "ingresses",
    ]


def test_no_escalate_and_bind_only_by_name_on_roles_bound_but_not_installed(
    rendered: tuple[Any, Any],
) -> None:
    # GIVEN every role of the sync identity folders and the roles the platform binds and installs
    _, files = rendered
    roles = [o for o in _objects(files, f"{SYNC_FOLDER}/") if o["kind"] in ("ClusterRole", "Role")]
    synced = _objects(files, "waves/") + _objects(files, "delivery/gates/")
    installed = {(o["kind"], o["metadata"]["name"]) for o in synced if o["kind"] in ("ClusterRole", "Role")}
    bound = {(o["roleRef"]["kind"], o["roleRef"]["name"]) for o in synced if "roleRef" in o}
    # THEN none may escalate, and `bind` names the roles it binds without installing them
    for role in roles:
        for rule in role["rules"]:
            assert "escalate" not in rule["verbs"], rule
            if "bind" in rule["verbs"]:
                assert rule["verbs"] == ["bind"] and rule.get("resourceNames"), rule
                kind = "ClusterRole" if rule["resources"] == ["clusterroles"] else "Role"
                for name in rule["resourceNames"]:
                    assert (kind, name) in bound - installed, (kind, name)


def test_the_identity_rides_the_root_s_sync_in_the_root_s_project(rendered: tuple[Any, Any]) -> None:
    # GIVEN the entry the root Application syncs
    plan, files = rendered
    d = plan.platform.delivery
    entry = _objects(files, "delivery/argocd/")
    apps = {o["metadata"]["name"]: o for o in entry if o["kind"] == "Application"}
    (project,) = [o for o in entry if o["kind"] == "AppProject"]
    # THEN an Application applies each sync identity folder to its cluster, in the root's project
    # (an identity cannot grant itself what it lacks), automated so a changed spec re-applies it
    wanted = {f"{plan.platform.name}-sync": (f"{SYNC_FOLDER}/cluster", d.cluster_server)}
    if d.remote:
        wanted[f"{plan.platform.name}-sync-argocd"] = (f"{SYNC_FOLDER}/argocd", IN_CLUSTER)
    for name, (folder, server) in wanted.items():
        app = apps[name]
        assert app["spec"]["project"] == "default"
        assert app["spec"]["source"]["path"] == f"{d.path}/{plan.platform.name}/{folder}"
        assert app["spec"]["destination"]["server"] == server
        assert app["spec"]["syncPolicy"]["automated"] == {"prune": True, "selfHeal": True}
    # AND the platform's own project neither holds them nor gains their destinations
    assert {a["spec"]["project"] for n, a in apps.items() if n not in wanted} == {plan.platform.name}
    assert {"server": d.cluster_server, "namespace": "gpuplatform-sync"} not in project["spec"][
        "destinations"
    ]


def test_bind_names_only_the_roles_bound_and_not_installed() -> None:
    # GIVEN a platform that installs one role and binds it and a built-in one
    installs = ArgoInstalls()
    installs.grant("ClusterRole", "mine", [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}])
    installs.bound |= {("ClusterRole", "mine"), ("ClusterRole", "view"), ("Role", "")}
    # THEN it holds its role's rules, and may bind the built-in one by name (a nameless role: never)
    assert held_rules(installs) == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
        {
            "apiGroups": ["rbac.authorization.k8s.io"],
            "resources": ["clusterroles"],
            "resourceNames": ["view"],
            "verbs": ["bind"],
        },
    ]
