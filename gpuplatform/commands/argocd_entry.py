"""`gpuplatform argocd-entry`: the root Application an Argo CD admin applies (or commits to their own
app of apps) once per platform, after which a merged wave is all a wave takes."""

from __future__ import annotations

from collections.abc import Sequence

from gpuplatform.commands.selection import load_selected, select_platform
from gpuplatform.errors import InputError, Problem
from gpuplatform.load.stacks import LoadedPlatform
from gpuplatform.output.yaml import dump_documents
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.applicationset import APPLICATIONSET_FOLDER, applicationset_name
from gpuplatform.render.argocd_root import render_root_application

__all__ = ["argocd_root_entries"]


def _refuse(loaded: list[LoadedPlatform], message: str) -> InputError:
    return InputError(
        [
            Problem(
                file=lp.locate("spec.delivery.engines")[0],
                loc=lp.locate("spec.delivery.engines")[1],
                code="",
                message=message.format(name=lp.platform.name),
            )
            for lp in loaded
        ]
    )


def argocd_root_entries(
    stack: str, overlays: Sequence[str], platform: str | None, applicationset: bool = False
) -> str:
    """Each selected platform's (of STACK, or the `platform`) root Application on its `delivery/argocd/`, as YAML documents; with
    `applicationset`, the one root on the stack's `delivery/argocd-applicationset/` (in the first
    selected platform's tree): it exists only when the whole stack has several Argo CD platforms.
    A platform that does not render Argo CD is an input error."""
    every = load_selected(stack, overlays)
    loaded = select_platform(stack, every, platform, one=False)
    without = [lp for lp in loaded if "argocd" not in lp.platform.delivery.engines]
    if without:
        raise _refuse(without, "platform {name!r} renders no Argo CD entry: add argocd to the engines")
    if not applicationset:
        roots = [
            render_root_application(plan_platform(lp.platform), lp.platform.name, "delivery/argocd")
            for lp in loaded
        ]
        return dump_documents(roots)
    members = [lp for lp in every if "argocd" in lp.platform.delivery.engines]
    if len(members) < 2:
        raise _refuse(
            loaded,
            "platform {name!r} has no ApplicationSet: a stack renders one only for several Argo CD platforms",
        )
    first = loaded[0]
    name = f"{applicationset_name(first.source)}-applicationsets"
    return dump_documents(
        [render_root_application(plan_platform(first.platform), name, APPLICATIONSET_FOLDER)]
    )
