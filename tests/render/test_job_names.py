"""A Job's pod template is immutable: a Job Flux applies keeps its name only while its whole spec
stays the same, so a changed image digest (or resources, or timeout) makes new Jobs instead of an
apply kustomize-controller fails."""

from __future__ import annotations

from typing import Any

import pytest

from gpuplatform.model import Platform
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.tree import render_tree

DIGEST_A = "sha256:" + "a" * 64
DIGEST_B = "sha256:" + "b" * 64


def _flux_jobs(platform: Platform) -> dict[str, dict[str, Any]]:
    """Name -> spec of every Job in a wave folder Flux builds (the Argo CD-only cleanup hook is in
    `argocd/`, recreated on every sync by its `BeforeHookCreation` policy)."""
    tree = render_tree(plan_platform(platform))
    return {
        obj["metadata"]["name"]: obj["spec"]
        for path, content in tree.files.items()
        if path.startswith("waves/") and "/argocd/" not in path and isinstance(content, list)
        for obj in content
        if obj.get("kind") == "Job"
    }


def _delivery(platform: Platform, **changes: Any) -> Platform:
    return platform.model_copy(update={"delivery": platform.delivery.model_copy(update=changes)})


def _variants(reference: Platform) -> dict[str, tuple[Platform, Platform]]:
    resources = reference.delivery.gate_resources
    bigger = resources.model_copy(update={"limits": resources.limits.model_copy(update={"memory": "1Gi"})})
    probe = reference.validation
    assert probe is not None
    return {
        "kubectl image digest": (
            _delivery(reference, kubectl_image_digest=DIGEST_A),
            _delivery(reference, kubectl_image_digest=DIGEST_B),
        ),
        "gate resources": (reference, _delivery(reference, gate_resources=bigger)),
        "validation image digest": (
            reference.model_copy(update={"validation": probe.model_copy(update={"image_digest": DIGEST_A})}),
            reference.model_copy(update={"validation": probe.model_copy(update={"image_digest": DIGEST_B})}),
        ),
    }


@pytest.mark.parametrize("change", ["kubectl image digest", "gate resources", "validation image digest"])
def test_a_job_keeps_its_name_only_while_its_spec_is_the_same(reference: Platform, change: str) -> None:
    # GIVEN the reference platform rendered before and after one change to its Jobs' pods
    before, after = (_flux_jobs(p) for p in _variants(reference)[change])
    # THEN every Job that kept its name kept its whole spec, and some Job did change
    kept = set(before) & set(after)
    assert [name for name in sorted(kept) if before[name] != after[name]] == []
    assert set(before) != set(after)


def test_a_changed_kubectl_image_digest_renames_every_gate_and_switch_job(reference: Platform) -> None:
    before, after = (_flux_jobs(p) for p in _variants(reference)["kubectl image digest"])
    kubectl_jobs = {
        n
        for n, spec in before.items()
        if spec["template"]["spec"]["containers"][0]["image"].endswith(DIGEST_A)
    }
    assert {n.split("-")[0] for n in kubectl_jobs} == {"gate", "switch"}
    assert not kubectl_jobs & set(after)
