"""The spec's named manifests, converted into every wave's hand-off from the wave that moves them.

A workload's converted pods name one request per GPU container, so the tool-owned template
`<workload>-gpu` of those waves takes the conversion's requests (its metadata stays the tool's). A
NIM service's manifest becomes its blue/green successor with its own NIMCache.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpuplatform.convert.manifests import Conversion, convert_text, template_name
from gpuplatform.convert.nimservice import convert_nimservice
from gpuplatform.convert.targets import Placement, Targets
from gpuplatform.errors import InputError
from gpuplatform.load.stacks import LoadedPlatform
from gpuplatform.model.workloads import Workload
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.handoff import converted_file
from gpuplatform.render.nim import dra_resources, nim_cache
from gpuplatform.render.tenants import dra_pool_tolerations
from gpuplatform.render.tree import Tree, file_name

__all__ = ["add_converted_manifests"]


def _convert(loaded: LoadedPlatform, index: int, workload: Workload) -> tuple[Conversion, list[object]]:
    p = loaded.platform
    assert workload.manifest is not None
    tier = Placement(p.class_name(workload.tier))
    targets = Targets(tier, {workload.resource: tier}, platform=p)
    conversion = convert_text(
        loaded.manifests[workload.manifest], workload.manifest, targets, share=workload.shared_claim
    )
    name = template_name(workload.name)
    found = [
        t["spec"]["spec"]["devices"]["requests"]
        for t in conversion.templates
        if t["metadata"]["name"] == name and t["metadata"].get("namespace") in (None, workload.namespace)
    ]
    if len(found) != 1:
        raise InputError.single(
            loaded.source,
            f"spec.workloads[{index}].manifest",
            f"{workload.manifest} has no GPU {workload.kind} {workload.name!r} to convert",
        )
    return conversion, found[0]


def add_converted_manifests(
    loaded: LoadedPlatform, plan: Plan, tree: Tree, states: Sequence[WaveState] | None = None
) -> None:
    """Add the converted manifests to the hand-offs and their requests to the tool-owned templates,
    in every wave (or in `states`, the waves `tree` holds)."""
    p = loaded.platform
    converted: dict[int, tuple[Conversion, list[object]]] = {}
    for state in plan.waves if states is None else states:
        for i in state.workloads:
            workload = p.workloads[i]
            if workload.manifest is None:
                continue
            if i not in converted:
                converted[i] = _convert(loaded, i, workload)
            conversion, requests = converted[i]
            tree.files[f"handoff/{state.dir_name}/{converted_file(workload)}"] = conversion.text
            path = f"waves/{state.dir_name}/40-tenants/{workload.namespace}/" + file_name(
                {
                    "kind": "ResourceClaimTemplate",
                    "metadata": {"namespace": workload.namespace, "name": template_name(workload.name)},
                }
            )
            documents = tree.files[path]
            assert isinstance(documents, list)
            [template] = documents
            template["spec"]["spec"]["devices"]["requests"] = requests
        for nim in p.nim_services:
            if nim.manifest is not None and nim.name in state.nim_services:
                text = convert_nimservice(
                    loaded.manifests[nim.manifest],
                    nim.manifest,
                    nim.name,
                    dra_resources(plan, nim),
                    nim_cache(nim),
                    dra_pool_tolerations(p),
                )
                tree.files[f"handoff/{state.dir_name}/{converted_file(nim)}"] = text
