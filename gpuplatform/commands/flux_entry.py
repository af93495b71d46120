"""`gpuplatform flux-entry`: the file each platform adds to its cluster's `flux bootstrap` folder."""

from __future__ import annotations

from collections.abc import Sequence

from gpuplatform.commands.selection import load_platforms
from gpuplatform.errors import InputError, Problem
from gpuplatform.output.yaml import dump_documents
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.flux_entry import render_cluster_entry, render_cluster_source

__all__ = ["flux_cluster_entries"]


def flux_cluster_entries(stack: str, overlays: Sequence[str], platform: str | None) -> str:
    """Each platform's (of STACK, or the `platform`) Flux Kustomization for `clusters/<name>/<platform>.yaml` (after its own
    GitRepository when it has one), as YAML documents; a platform that does not render Flux is an
    input error."""
    loaded = load_platforms(stack, overlays, platform)
    problems = [
        Problem(
            file=lp.locate("spec.delivery.engines")[0],
            loc=lp.locate("spec.delivery.engines")[1],
            code="",
            message=f"platform {lp.platform.name!r} renders no Flux entry: add flux to the engines",
        )
        for lp in loaded
        if "flux" not in lp.platform.delivery.engines
    ]
    if problems:
        raise InputError(problems)
    documents = []
    for lp in loaded:
        plan = plan_platform(lp.platform)
        source = render_cluster_source(plan)
        documents += ([source] if source is not None else []) + [render_cluster_entry(plan)]
    return dump_documents(documents)
