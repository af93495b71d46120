"""Argo CD ApplicationSets over every platform (cluster) of one stack, with their AppProjects.

An alternative to each cluster's own `delivery/argocd/` entry, for an Argo CD that manages several
clusters: apply one or the other, not both (they generate the same Applications). The sets
generate exactly each platform's entry Applications (`delivery.entry_apps`): `<stack>` the
automated ones (each cluster's wave and gate identity, deployed to that cluster), `<stack>-apps`
the remote clusters' child Applications (on Argo CD's cluster, synced by hand). Each member tree
carries the same folder, so every tree stays self-contained.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from gpuplatform.plan.waves import Plan
from gpuplatform.render.delivery import (
    TreeFiles,
    entry_apps,
    entry_sync_policy,
    platform_root,
    render_app_project,
)
from gpuplatform.render.meta import MANAGED_BY, WAVE_LABEL, Obj, k8s_object

__all__ = ["APPLICATIONSET_FOLDER", "applicationset_name", "render_applicationsets"]

APPLICATIONSET_FOLDER = "delivery/argocd-applicationset"


def applicationset_name(source: str) -> str:
    """The stack's ApplicationSet name: its file's stem as a DNS label (`stack` when nothing is left)."""
    return re.sub(r"[^a-z0-9-]+", "-", Path(source).stem.lower()).strip("-")[:63] or "stack"


def _field(key: str) -> str:
    """A Go template reference to an element's key (`{{.app}}`)."""
    return "{{." + key + "}}"


def _applicationset(name: str, wave: str, namespace: str, elements: list[Obj], policy: Obj) -> Obj:
    """One set; every generated Application carries the entry's labels and `policy` (its syncPolicy).

    Go templates with `missingkey=error` (a key an element lacks fails the set instead of rendering
    an empty string), as Argo CD recommends (argo-cd v3.5.1 docs/operator-manual/applicationset/
    GoTemplate.md), not the fasttemplate it will deprecate (Template.md).
    """
    return k8s_object(
        "argoproj.io/v1alpha1",
        "ApplicationSet",
        name,
        wave=wave,
        namespace=namespace,
        spec={
            "goTemplate": True,
            "goTemplateOptions": ["missingkey=error"],
            "generators": [{"list": {"elements": elements}}],
            "template": {
                "metadata": {
                    "name": _field("app"),
                    "labels": {MANAGED_BY: "gpuplatform", WAVE_LABEL: _field("wave")},
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
    wave = "-".join(sorted({plan.platform.active_wave for plan, _ in members}))[:63].strip("-")
    elements: dict[bool, list[Obj]] = {True: [], False: []}
    for plan, _ in members:
        d = plan.platform.delivery
        for app in entry_apps(plan):
            elements[app.automated].append(
                {
                    "app": app.name,
                    "project": app.project or plan.platform.name,
                    "server": app.server,
                    "namespace": app.namespace,
                    "path": f"{platform_root(plan)}/{app.path}",
                    "repoURL": d.repo_url,
                    "revision": d.revision,
                    "wave": plan.active.name,
                }
            )
    ns = first.delivery.argocd_namespace
    objects = [render_app_project(plan, files) for plan, files in members]
    for automated, suffix in ((True, ""), (False, "-apps")):
        if elements[automated]:
            policy = entry_sync_policy(automated)
            objects.append(_applicationset(f"{name}{suffix}", wave, ns, elements[automated], policy))
    return objects
