"""Argo CD ApplicationSets over every platform (cluster) of one stack, with their AppProjects.

An alternative to each cluster's own `delivery/argocd/` entry, for an Argo CD that manages several
clusters: apply one or the other, not both (they generate the same Applications). The sets
generate exactly each platform's entry Applications (`delivery.entry_apps`): `<stack>` the
automated ones (each cluster's wave and gate identity, deployed to that cluster), `<stack>-apps`
the remote clusters' child Applications (on Argo CD's cluster, synced by hand); members that turn
Argo CD's prune or selfHeal off get sets of their own (`<stack>-noprune`, ...). Each member tree
carries the same folder, so every tree stays self-contained.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from gpuplatform.plan.waves import Plan
from gpuplatform.render.delivery import (
    TreeFiles,
    argocd_installs,
    entry_apps,
    entry_sync_policy,
    platform_root,
    render_app_project,
)
from gpuplatform.render.meta import MANAGED_BY, Obj, for_every_wave, k8s_object

__all__ = ["APPLICATIONSET_FOLDER", "applicationset_name", "render_applicationsets"]

APPLICATIONSET_FOLDER = "delivery/argocd-applicationset"


def applicationset_name(source: str) -> str:
    """The stack's ApplicationSet name: its file's stem as a DNS label (`stack` when nothing is left)."""
    return re.sub(r"[^a-z0-9-]+", "-", Path(source).stem.lower()).strip("-")[:63] or "stack"


def _field(key: str) -> str:
    """A Go template reference to an element's key (`{{.app}}`)."""
    return "{{." + key + "}}"


def _applicationset(name: str, namespace: str, elements: list[Obj], policy: Obj) -> Obj:
    """One set; every generated Application carries the entry's labels and `policy` (its syncPolicy).

    Go templates with `missingkey=error` (a key an element lacks fails the set instead of rendering
    an empty string), as Argo CD recommends (argo-cd v3.5.1 docs/operator-manual/applicationset/
    GoTemplate.md), not the fasttemplate it will deprecate (Template.md).
    """
    return k8s_object(
        "argoproj.io/v1alpha1",
        "ApplicationSet",
        name,
        wave=None,
        namespace=namespace,
        spec={
            "goTemplate": True,
            "goTemplateOptions": ["missingkey=error"],
            "generators": [{"list": {"elements": elements}}],
            "template": {
                "metadata": {
                    "name": _field("app"),
                    "labels": {MANAGED_BY: "gpuplatform"},
                },
                "spec": {
                    "project": _field("project"),
                    "source": {
                        "repoURL": _field("repoURL"),
                        "targetRevision": _field("revision"),
                        "path": _field("path"),
                    },
                    "destination": {"server": _field("server"), "namespace": _field("namespace")},
                    "syncPolicy": policy,
                },
            },
        },
    )


def render_applicationsets(name: str, members: Sequence[tuple[Plan, TreeFiles]]) -> list[Obj]:
    """Every member's AppProject and the ApplicationSets of their entry Applications."""
    members = sorted(members, key=lambda m: m[0].platform.name)
    first = members[0][0].platform
    elements: dict[tuple[bool, bool] | None, list[Obj]] = {}
    for plan, _ in members:
        d = plan.platform.delivery
        chosen = (d.argocd_prune, d.argocd_self_heal)
        for app in entry_apps(plan):
            elements.setdefault(chosen if app.automated else None, []).append(
                {
                    "app": app.name,
                    "project": app.project or plan.platform.name,
                    "server": app.server,
                    "namespace": app.namespace,
                    "path": f"{platform_root(plan)}/{app.path}",
                    "repoURL": d.repo_url,
                    "revision": d.revision,
                }
            )
    ns = first.delivery.argocd_namespace
    objects = for_every_wave(
        [render_app_project(plan, argocd_installs(plan, files)) for plan, files in members]
    )
    for key, found in sorted(elements.items(), key=lambda e: (e[0] is None, e[0] != (True, True), str(e[0]))):
        policy = entry_sync_policy(None if key is None else {"prune": key[0], "selfHeal": key[1]})
        objects.append(_applicationset(f"{name}{_suffix(key)}", ns, found, policy))
    return objects


def _suffix(policy: tuple[bool, bool] | None) -> str:
    """The set's name suffix: none for the default policy, `-apps` for the child Applications synced by
    hand, `-noprune`/`-noselfheal` for platforms that turn those off (a set has one syncPolicy)."""
    if policy is None:
        return "-apps"
    prune, heal = policy
    return "-noprune" * (not prune) + "-noselfheal" * (not heal)
