"""Argo CD's root Application: the one object an operator commits or applies once, after which
merging a wave pull request is all a wave takes.

The upstream pattern is the app of apps (argo-cd v3.5.1 docs/operator-manual/cluster-bootstrapping.md,
"App Of Apps Pattern"): one Application, in Argo CD's namespace on Argo CD's own cluster, whose
source is a folder of Applications. Here that folder is the platform's `delivery/argocd/` (the
AppProject and the entry Applications, whose paths name the active wave) or, for a stack of
several Argo CD platforms, `delivery/argocd-applicationset/`. The root names no wave: advancing
a wave never changes it.

It lives in the `default` project, as upstream's example does: creating AppProjects and
Applications in Argo CD's namespace is an admin-level capability ("Projects with access to the
namespace in which Argo CD is installed effectively have admin-level privileges", same page), so
whoever may push to the folder it reads is an Argo CD admin. It carries no resources finalizer:
deleting it orphans the entry Applications instead of uninstalling the platform.
"""

from __future__ import annotations

from gpuplatform.model.platform import IN_CLUSTER
from gpuplatform.plan.waves import Plan
from gpuplatform.render.delivery import ROOT_PROJECT, automated_policy, entry_sync_policy, platform_root
from gpuplatform.render.meta import MANAGED_BY, Obj, order_keys

__all__ = ["render_root_application", "root_application_name"]


def root_application_name(name: str) -> str:
    """`<platform>-root` (or `<stack>-root` for an ApplicationSet entry)."""
    return f"{name}-root"


def render_root_application(plan: Plan, name: str, folder: str) -> Obj:
    """The root Application `<name>-root` syncing `<delivery.path>/<platform>/<folder>` into Argo CD's
    namespace, automated (prune, self-heal, retry without limit) like the entry it applies."""
    d = plan.platform.delivery
    return order_keys(
        {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "Application",
            "metadata": {
                "name": root_application_name(name),
                "namespace": d.argocd_namespace,
                "labels": {MANAGED_BY: "gpuplatform"},
            },
            "spec": {
                "project": ROOT_PROJECT,
                "source": {
                    "repoURL": d.repo_url,
                    "targetRevision": d.revision,
                    "path": f"{platform_root(plan)}/{folder}",
                },
                "destination": {"server": IN_CLUSTER, "namespace": d.argocd_namespace},
                # always pruning: a stale entry Application would go on syncing an old wave
                "syncPolicy": entry_sync_policy(automated_policy(None)),
            },
        }
    )
