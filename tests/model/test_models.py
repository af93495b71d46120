"""The spec models: frozen, strict, camelCase, with the constraints the renderer relies on."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gpuplatform.model import NodePool, Platform, ServiceTier, Tenant
from tests.specs import minimal_spec


def _platform(**changes: object) -> Platform:
    doc = minimal_spec()
    doc["spec"].update(changes)
    return Platform.model_validate({"name": doc["metadata"]["name"], **doc["spec"]})


def test_models_are_frozen_and_forbid_unknown_fields() -> None:
    pool = NodePool(name="p", nodes=["n1"], product="H100-80GB")
    with pytest.raises(ValidationError):
        pool.name = "q"  # type: ignore[misc]
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        NodePool.model_validate({"name": "p", "nodes": ["n1"], "product": "x", "colour": "red"})


def test_camel_case_aliases_and_python_names_both_populate() -> None:
    by_alias = NodePool.model_validate({"name": "p", "nodes": ["n"], "product": "x", "gpusPerNode": 2})
    by_name = NodePool(name="p", nodes=["n"], product="x", gpus_per_node=2)
    assert by_alias == by_name
    assert by_alias.model_dump(by_alias=True)["gpusPerNode"] == 2


@pytest.mark.parametrize("name", ["Bad", "-x", "a_b", "a" * 64, "../x", "a/b", ""])
def test_names_that_become_paths_must_be_dns_labels(name: str) -> None:
    with pytest.raises(ValidationError, match="DNS label"):
        NodePool(name=name, nodes=["n"], product="x")


def test_pool_lists_nodes_or_names_a_provisioner() -> None:
    with pytest.raises(ValidationError, match="exactly one"):
        NodePool(name="p", product="x")
    with pytest.raises(ValidationError, match="exactly one"):
        NodePool.model_validate(
            {"name": "p", "product": "x", "nodes": ["n"], "provisioner": {"kind": "karpenter", "name": "gpu"}}
        )
    with pytest.raises(ValidationError, match="listed twice"):
        NodePool(name="p", product="x", nodes=["n", "n"])


def test_tier_is_typed_or_raw_cel() -> None:
    with pytest.raises(ValidationError, match="not both"):
        ServiceTier(name="t", architecture="Hopper", cel="true")
    with pytest.raises(ValidationError, match="deviceType: mig"):
        ServiceTier(name="t", mig_profile="1g.10gb")
    with pytest.raises(ValidationError, match="quantity"):
        ServiceTier(name="t", min_memory="forty gigs")
    with pytest.raises(ValidationError, match="semantic version"):
        ServiceTier(name="t", min_compute_capability="v9")


def test_tenant_namespace_defaults_to_its_name() -> None:
    assert Tenant(name="team-a").ns == "team-a"
    assert Tenant(name="team-a", namespace="ml-a").ns == "ml-a"


def test_release_numbers_are_checked() -> None:
    with pytest.raises(ValidationError, match="release number"):
        _platform(kubernetes={"version": "latest"})


def test_mode_label_defaults_from_the_domain() -> None:
    p = _platform()
    assert p.mode_label_key == "gpu-scheduling.lab.example.com/mode"
    assert p.class_name("full") == "full.lab.example.com"


def test_a_no_execute_dra_taint_is_refused() -> None:
    # the taint goes on before the GPU-only drain: NoExecute would evict every non-tolerating pod at once
    taint = {"key": "example.com/dra", "effect": "NoExecute"}
    with pytest.raises(ValidationError, match="taint-eviction controller would evict every pod"):
        NodePool(name="p", nodes=["n"], product="H100-80GB", taint=taint)
    assert NodePool(name="p", nodes=["n"], product="H100-80GB", taint={**taint, "effect": "NoSchedule"}).taint
