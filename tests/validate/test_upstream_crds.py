"""The output of every bundled stack is valid under the upstream CRDs of Argo CD, Flux, Kueue and the
NVIDIA NIM Operator, at the minimum and the newest supported release: schema, list types and CEL
rules (`tests/upstream_crds.py`; Karpenter's NodePools, hand-off patches, are judged once applied:
`tests/render/test_karpenter_handoff.py`). The project's own schemas, which synth still uses, are
weaker: they accept what the upstream CRDs refuse."""

from __future__ import annotations

import copy
from dataclasses import replace
from functools import cache
from typing import Any

import pytest
import yaml

from gpuplatform.commands.synth import render_all
from gpuplatform.load.stacks import LoadedPlatform, discover_stacks, load_stack
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.flux_entry import render_cluster_entry, render_cluster_source
from gpuplatform.validate.schemas import own_validator
from gpuplatform.versions import FLUX_MINIMUM
from tests.conftest import REPO
from tests.upstream_crds import UPSTREAM_GROUPS, crd_errors

#: Every custom kind the bundled stacks render for the engines to apply, by release.
EXPECTED_KINDS = {
    "newest": {
        "Application",
        "AppProject",
        "ApplicationSet",
        "HelmRelease",
        "OCIRepository",
        "HelmRepository",
        "GitRepository",
        "Kustomization",
        "ClusterQueue",
        "LocalQueue",
        "ResourceFlavor",
        "NIMService",
    },
}
# Rendered for Flux 2.3, the releases' OCI charts come from HelmRepositories (no OCIRepository v1).
EXPECTED_KINDS["minimum"] = EXPECTED_KINDS["newest"] - {"OCIRepository"}


def _at_release(lp: LoadedPlatform, release: str) -> LoadedPlatform:
    if release == "newest":
        return lp
    delivery = lp.platform.delivery.model_copy(update={"flux_version": str(FLUX_MINIMUM)})
    return replace(lp, platform=lp.platform.model_copy(update={"delivery": delivery}))


@cache
def _custom_objects(release: str) -> list[tuple[str, dict[str, Any]]]:
    """(where, object) of every custom resource the stacks render for `release`: the tree's and
    `flux-entry`'s (each content once); hand-off NodePools are merge patches, not objects."""
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    for stack in discover_stacks(REPO / "stacks"):
        loaded = [_at_release(lp, release) for lp in load_stack(stack)]
        found = [
            (f"{name}/{path}", obj)
            for name, files in render_all(loaded).items()
            for path, data in files.items()
            if path.endswith(".yaml")
            for obj in yaml.load_all(data, Loader=yaml.CSafeLoader)
        ]
        for lp in loaded:
            if "flux" in lp.platform.delivery.engines:
                plan = plan_platform(lp.platform)
                entry = [render_cluster_source(plan), render_cluster_entry(plan)]
                found += [(f"{lp.platform.name}: flux-entry", o) for o in entry if o is not None]
        for where, obj in found:
            if obj and obj["apiVersion"].split("/")[0] in UPSTREAM_GROUPS:
                if obj["kind"] == "NodePool" and "/handoff/" in where:
                    continue
                out.setdefault(repr(obj), (where, obj))
    return list(out.values())


@pytest.mark.parametrize("release", ["newest", "minimum"])
def test_every_custom_resource_is_valid_under_the_upstream_crds(release: str) -> None:
    objects = _custom_objects(release)
    assert {o["kind"] for _, o in objects} == EXPECTED_KINDS[release]
    refused = [f"{where}: {e}" for where, obj in objects for e in crd_errors(obj, release)]
    assert refused == []


def _first(kind: str) -> dict[str, Any]:
    return copy.deepcopy(next(o for _, o in _custom_objects("newest") if o["kind"] == kind))


def _hand_written_accepts(obj: dict[str, Any]) -> bool:
    return own_validator(obj["apiVersion"], obj["kind"]).is_valid(obj)


def test_a_bad_duration_is_refused_upstream_and_was_accepted_by_the_hand_written_schema() -> None:
    kustomization = _first("Kustomization")
    kustomization["spec"]["interval"] = "10 minutes"
    assert _hand_written_accepts(kustomization)
    for release in ("newest", "minimum"):
        [error] = crd_errors(kustomization, release)
        assert error.startswith('spec.interval: "10 minutes" does not match')


def test_a_cel_rule_violation_is_refused_upstream_and_was_accepted_by_the_hand_written_schema() -> None:
    # GIVEN a HelmRelease whose upgrade strategy remediates but sets the retry interval of RetryOnFailure
    release = _first("HelmRelease")
    release["spec"]["upgrade"]["strategy"] = {"name": "RemediateOnFailure", "retryInterval": "5m"}
    assert _hand_written_accepts(release)
    # THEN the newest CRD's rule on `spec.upgrade.strategy` refuses it (Flux 2.3 has no strategy at all)
    assert crd_errors(release, "newest") == [
        "spec.upgrade.strategy: .retryInterval can only be set when .name is 'RetryOnFailure'"
    ]


def test_a_duplicate_queue_flavor_is_refused_upstream_and_was_accepted_by_the_hand_written_schema() -> None:
    queue = _first("ClusterQueue")
    flavors = queue["spec"]["resourceGroups"][0]["flavors"]
    flavors.append(copy.deepcopy(flavors[0]))
    assert _hand_written_accepts(queue)
    for release in ("newest", "minimum"):
        assert crd_errors(queue, release) == [
            f'spec.resourceGroups[0].flavors: duplicate entries for key "{flavors[0]["name"]}" (list type map)'
        ]
