"""References by object or by name, lists where tuples are held (issue 37, item 2)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gpuplatform.load.documents import platform_document
from gpuplatform.model import (
    BridgeClass,
    ClaimTemplate,
    ClusterQueue,
    NodePool,
    Platform,
    Provisioner,
    ServiceTier,
    Tenant,
    ValidationWorkload,
    Wave,
    Workload,
)
from tests.sdk import lab_platform, lab_platform_fields


def test_a_reference_takes_the_object_and_holds_its_name() -> None:
    pilot = Wave(name="pilot", stage="pilot-pool")
    by_object = NodePool(name="new", nodes=["gpu-02"], product="H100-80GB", migrates_in=pilot)
    by_name = NodePool(name="new", nodes=("gpu-02",), product="H100-80GB", migrates_in="pilot")
    assert by_object == by_name
    assert by_object.migrates_in == "pilot"
    assert by_object.nodes == ("gpu-02",)


def test_lists_of_references_mix_objects_and_names() -> None:
    full = ServiceTier(name="full")
    team = Tenant(name="team-a", tiers=[full, "fast"])
    wave = Wave(name="claims", stage="native-claim-pilot", tiers=[full], tenants=[team])
    assert (team.tiers, wave.tiers, wave.tenants) == (("full", "fast"), ("full",), ("team-a",))


def test_every_reference_field_takes_its_object() -> None:
    full, team, claims = ServiceTier(name="full"), Tenant(name="team-a"), Wave(name="claims", stage="scale")
    assert ServiceTier(name="x", owner=team).owner == "team-a"
    assert BridgeClass(name="b", tier=full).tier == "full"
    assert ClaimTemplate(name="t", tier=full).tier == "full"
    assert ClusterQueue(name="q", tenants=[team], quotas={"pool": 1}).tenants == ("team-a",)
    workload = Workload(kind="Job", namespace="ns", name="w", tier=full, moves_in=claims)
    assert (workload.tier, workload.moves_in) == ("full", "claims")
    assert ValidationWorkload(tenant=team, claim_template="t").tenant == "team-a"
    pool = NodePool(name="p", nodes=["n"], product="H100-80GB")
    group = Provisioner(kind="node-group", cloud="gke", name="gpus")
    assert (
        NodePool(
            name="q", product="H100-80GB", provisioner=group, takes_over_from=pool, migrates_in=claims
        ).takes_over_from
        == "p"
    )


def test_an_object_of_another_kind_is_refused_where_it_is() -> None:
    with pytest.raises(ValidationError) as exc:
        NodePool(name="new", nodes=["gpu-02"], product="H100-80GB", migrates_in=ServiceTier(name="full"))
    assert [(e["loc"], e["msg"]) for e in exc.value.errors()] == [
        (("migrates_in",), "Value error, expected a Wave or its name, found a ServiceTier")
    ]


def test_a_platform_of_objects_is_the_platform_of_names() -> None:
    fields = lab_platform_fields()
    full, team = fields["tiers"][0], fields["tenants"][0]
    waves = fields["waves"]
    fields["node_pools"][1] = fields["node_pools"][1].model_copy(update={"migrates_in": "pilot"})
    by_objects = Platform(
        **fields
        | {
            "node_pools": [
                fields["node_pools"][0],
                NodePool(name="new", nodes=["gpu-02"], product="H100-80GB", migrates_in=waves[1]),
            ],
            "tenants": [
                Tenant(
                    name="team-a",
                    tiers=[full],
                    groups=["team-a-ops"],
                    claim_templates=[ClaimTemplate(name="one-gpu", tier=full)],
                )
            ],
            "waves": [
                *waves[:2],
                Wave(name="claims", stage="native-claim-pilot", tiers=[full], tenants=[team]),
                waves[3],
            ],
            "active_wave": waves[1],
        }
    )
    assert platform_document(by_objects) == platform_document(lab_platform())
