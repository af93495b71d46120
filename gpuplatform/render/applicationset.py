"""An Argo CD ApplicationSet over every platform (cluster) of one stack.

It is an alternative to each cluster's own `delivery/argocd/` Application, for an Argo CD that
manages several clusters: apply one or the other, not both (they generate the same Application
names). Each member tree carries the same file under `delivery/argocd-applicationset/`, so every
tree stays self-contained.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpuplatform.plan.waves import Plan
from gpuplatform.render.meta import Obj, k8s_object

__all__ = ["APPLICATIONSET_FOLDER", "render_applicationset"]

APPLICATIONSET_FOLDER = "delivery/argocd-applicationset"


def render_applicationset(name: str, plans: Sequence[Plan]) -> Obj:
    """One list generator element per platform: its project, cluster and active wave's entry path."""
    first = plans[0].platform
    elements = [
        {
            "name": plan.platform.name,
            "server": plan.platform.delivery.cluster_server,
            "path": f"{plan.platform.delivery.path}/{plan.platform.name}/waves/{plan.active.dir_name}/argocd",
            "repoURL": plan.platform.delivery.repo_url,
            "revision": plan.platform.delivery.revision,
        }
        for plan in sorted(plans, key=lambda p: p.platform.name)
    ]
    return k8s_object(
        "argoproj.io/v1alpha1",
        "ApplicationSet",
        name,
        wave="-".join(sorted({p.platform.active_wave for p in plans}))[:63].strip("-"),
        namespace=first.delivery.argocd_namespace,
        spec={
            "generators": [{"list": {"elements": elements}}],
            "template": {
                "metadata": {"name": "{{name}}"},
                "spec": {
                    "project": "{{name}}",
                    "source": {
                        "repoURL": "{{repoURL}}",
                        "targetRevision": "{{revision}}",
                        "path": "{{path}}",
                    },
                    "destination": {"server": "{{server}}", "namespace": first.dra_driver.namespace},
                    "syncPolicy": {
                        "automated": {"prune": True, "selfHeal": True},
                        "syncOptions": ["ServerSideApply=true", "PruneLast=true"],
                    },
                },
            },
        },
    )
