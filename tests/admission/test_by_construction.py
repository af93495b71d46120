"""Everything the platform renders into tenant namespaces passes the policies of the same wave, as
the GitOps controllers apply it (no exemption needed), for every stack and every wave."""

from __future__ import annotations

from typing import Any

import pytest

from gpuplatform.commands.synth import render_trees
from gpuplatform.load.stacks import LoadedPlatform, load_stack
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.tree import Tree
from tests.admission.admission_env import admission
from tests.admission.lab import ARGOCD, FLUX, lab_platform
from tests.conftest import REPO

CLAIM_KINDS = ("ResourceClaim", "ResourceClaimTemplate")


def _wave_objects(tree: Tree, wave_dir: str, layer: str) -> list[dict[str, Any]]:
    prefix = f"waves/{wave_dir}/{layer}/"
    return [
        doc
        for path, docs in tree.files.items()
        if path.startswith(prefix) and not path.endswith("kustomization.yaml") and isinstance(docs, list)
        for doc in docs
    ]


def _refusals(loaded: LoadedPlatform) -> list[str]:
    tree = render_trees([loaded])[loaded.platform.name]
    found = []
    for state in plan_platform(loaded.platform).waves:
        policies = _wave_objects(tree, state.dir_name, "30-policy")
        for obj in _wave_objects(tree, state.dir_name, "40-tenants"):
            if obj["kind"] not in CLAIM_KINDS:
                continue
            for user in (ARGOCD, FLUX):
                for denial in admission(policies, obj, namespace=obj["metadata"]["namespace"], user=user):
                    found.append(f"{state.name}: {obj['kind']}/{obj['metadata']['name']}: {denial}")
    return found


@pytest.mark.parametrize("stack", ["reference.py", "nim-lab.yaml"])
def test_every_rendered_claim_object_passes_its_waves_policies(stack: str) -> None:
    for loaded in load_stack(REPO / "stacks" / stack):
        assert _refusals(loaded) == []


def test_the_lab_passes_and_a_foreign_tier_breaks_it() -> None:
    assert _refusals(LoadedPlatform(lab_platform(), "lab.yaml", (), {})) == []
    nim = lab_platform().nim_services[0].model_copy(update={"mode": "template"})
    broken = lab_platform().model_copy(update={"nim_services": (nim.model_copy(update={"tier": "full"}),)})
    tenants = tuple(
        t.model_copy(update={"tiers": ("hopper",)}) if t.name == "team-a" else t for t in broken.tenants
    )
    refused = _refusals(LoadedPlatform(broken.model_copy(update={"tenants": tenants}), "lab.yaml", (), {}))
    assert any("ResourceClaimTemplate/llm-dra-gpu" in r for r in refused)
