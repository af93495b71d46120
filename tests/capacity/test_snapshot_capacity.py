"""Capacity from a snapshot: real nodes, allocatable GPUs, ResourceSlices and the claims that hold devices."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpuplatform.capacity.report import WaveCapacity
from gpuplatform.capacity.run import stack_capacity
from gpuplatform.errors import InputError
from gpuplatform.inventory.catalog import slices_for_node
from gpuplatform.load.documents import platform_document
from gpuplatform.load.stacks import LoadedPlatform
from gpuplatform.model import ClaimTemplate, Platform
from gpuplatform.render.nodes import pool_taint
from gpuplatform.testing import Cluster, claim, node, pod
from tests.capacity.fleets import platform, pool, provisioned, workload

MODE = "gpu-scheduling.lab.example.com/mode"


def lab(templates: list[ClaimTemplate] = (), **extra: Any) -> Platform:  # type: ignore[assignment]
    """Two legacy nodes (old-00, old-01) and one DRA pilot node (new-00)."""
    pools = extra.pop("pools", [pool("old", 2), pool("new", 1, migrates_in="pilot")])
    return platform(pools, extra.pop("workloads", []), templates, **extra)


def dra_node(name: str, p: Platform) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A node in DRA mode (no device plugin GPUs, the DRA taint) and the slices the driver publishes."""
    found = node(name, labels={MODE: "dra"})
    found["spec"] = {"taints": [pool_taint(p, p.node_pools[1])]}
    return found, slices_for_node(name, "H100-80GB", 8, driver_release=p.dra_driver.chart_version)


def lab_nodes(p: Platform, legacy: dict[str, str]) -> list[dict[str, Any]]:
    """Legacy nodes with their allocatable GPUs, and new-00 in DRA mode."""
    return [*(node(n, gpus=g, labels={MODE: "legacy"}) for n, g in legacy.items()), dra_node("new-00", p)[0]]


def snapshot(tmp_path: Path, p: Platform, legacy: dict[str, str], **kinds: Any) -> str:
    """A snapshot of the lab (`lab_nodes`) with new-00's slices; `kinds` replace or add kinds."""
    base: dict[str, Any] = {
        "nodes": lab_nodes(p, legacy),
        "pods": [],
        "replicasets": [],
        "jobs": [],
        "daemonsets": [],
        "resourceslices": dra_node("new-00", p)[1],
        "resourceclaims": [],
    }
    return str(Cluster(kinds={**base, **kinds}).write(tmp_path / "snap"))


def capacity(p: Platform, wave: str, folder: str | None) -> WaveCapacity:
    loaded = LoadedPlatform(p, "lab.py", (), platform_document(p))
    (found,) = stack_capacity([loaded], wave, False, folder)
    return found


def pools(result: WaveCapacity) -> dict[str, tuple[str, int, int, str]]:
    return {u.name: (u.mode, u.capacity, u.free, u.source) for u in result.moments[-1].outcome.pools}


def foreign_claims(count: int) -> list[dict[str, Any]]:
    """Claims of another team, allocated on new-00's first devices."""
    return [claim(f"other-{i}", "other", "new-00", device=f"gpu-{i}") for i in range(count)]


def test_a_node_with_fewer_allocatable_gpus_than_modelled_is_counted_as_it_is(tmp_path: Path) -> None:
    # GIVEN two 8-GPU pods, and a snapshot where one legacy node advertises only 7 GPUs
    p = lab(workloads=[workload("train", 2, 8)])
    assert capacity(p, "pilot", None).fits
    folder = snapshot(tmp_path, p, {"old-00": "8", "old-01": "7"})
    # WHEN capacity reads the snapshot
    result = capacity(p, "pilot", folder)
    # THEN the second pod does not fit, and the numbers say where they come from
    (failure,) = result.moments[-1].outcome.failures
    assert failure.placed == 1 and "but only 7 free on device-plugin nodes" in failure.reason
    assert pools(result)["old"] == ("legacy", 15, 7, "snapshot")


def test_devices_held_by_claims_the_spec_does_not_model_are_not_free(tmp_path: Path) -> None:
    # GIVEN three one-device claims of the tenant in the claims wave
    p = lab([ClaimTemplate(name="one", tier="full", claims=3)])
    legacy = {"old-00": "8", "old-01": "8"}
    assert capacity(p, "claims", snapshot(tmp_path / "free", p, legacy)).fits
    # WHEN another team's claims hold six of new-00's eight devices
    result = capacity(p, "claims", snapshot(tmp_path / "held", p, legacy, resourceclaims=foreign_claims(6)))
    # THEN only two are free, and the report says why
    (failure,) = result.moments[-1].outcome.failures
    assert failure.placed == 2
    assert "only 0 matching device(s) are free on DRA nodes" in failure.reason
    assert pools(result)["new"] == ("dra", 8, 0, "snapshot")
    assert "6 device(s) held by 6 allocated claim(s) the spec does not model: not free" in result.notes


def _template_pod(name: str, claim_name: str) -> dict[str, Any]:
    found = pod(name, "team", "new-00", resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "one"}])
    found["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": claim_name}]
    return found


def test_claims_made_from_a_tenant_template_are_that_template_s_demand(tmp_path: Path) -> None:
    # GIVEN the tenant's template asks for one claim and the cluster already holds three made from it
    p = lab([ClaimTemplate(name="one", tier="full", claims=1)])
    pods = [_template_pod(f"job-{i}", f"job-{i}-gpu") for i in range(3)]
    claims = [claim(f"job-{i}-gpu", "team", "new-00", f"gpu-{i}") for i in range(3)]
    for i, c in enumerate(claims):
        c["metadata"]["ownerReferences"] = [{"kind": "Pod", "name": f"job-{i}", "controller": True}]
    folder = snapshot(tmp_path, p, {"old-00": "8", "old-01": "8"}, pods=pods, resourceclaims=claims)
    result = capacity(p, "claims", folder)
    # THEN they count once, as the template's demand (3 devices), and nothing is held twice
    assert result.moments[-1].demand["dra"] == 3
    assert pools(result)["new"] == ("dra", 8, 5, "snapshot")
    assert not [n for n in result.notes if "held by" in n]


def test_a_claim_of_a_spec_workload_s_pod_is_that_workload_s_demand(tmp_path: Path) -> None:
    p = lab(workloads=[workload("train", 2, 1, moves_in="move")])
    owner = [{"kind": "ReplicaSet", "name": "train-5c6d", "controller": True}]
    pods = [
        pod(f"train-5c6d-{i}", "team", "new-00", owners=owner, labels={"pod-template-hash": "5c6d"})
        for i in range(2)
    ]
    claims = [claim(f"train-{i}", "team", "new-00", f"gpu-{i}") for i in range(2)]
    for i, c in enumerate(claims):
        c["status"]["reservedFor"] = [{"resource": "pods", "name": f"train-5c6d-{i}"}]
    folder = snapshot(tmp_path, p, {"old-00": "8", "old-01": "8"}, pods=pods, resourceclaims=claims)
    result = capacity(p, "move", folder)
    assert result.moments[-1].demand["dra"] == 2
    assert pools(result)["new"] == ("dra", 8, 6, "snapshot")


def test_a_pool_in_another_mode_than_the_snapshot_shows_is_modelled_on_its_real_nodes(tmp_path: Path) -> None:
    p = lab(workloads=[workload("train", 1, 8)])
    result = capacity(p, "base", snapshot(tmp_path, p, {"old-00": "8", "old-01": "8"}))
    assert pools(result)["new"] == ("legacy", 8, 8, "snapshot nodes, modelled devices")


def test_a_provisioner_pool_counts_the_nodes_found_and_grows_to_its_limit(tmp_path: Path) -> None:
    # GIVEN a Karpenter pool with two nodes in the snapshot and at most three
    kp = provisioned("kp", max_nodes=3)
    p = lab(pools=[kp, pool("new", 1, migrates_in="pilot")], workloads=[workload("train", 4, 8)])
    labels = {"karpenter.sh/nodepool": "kp-np", MODE: "legacy"}
    nodes = [node(f"kp-{i}", gpus="8", labels=labels) for i in range(2)]
    new, slices = dra_node("new-00", p)
    folder = str(Cluster(kinds={"nodes": [*nodes, new], "resourceslices": slices}).write(tmp_path / "snap"))
    result = capacity(p, "pilot", folder)
    # THEN one node is added, the fourth pod has none, and the limit is named
    use = next(u for u in result.moments[-1].outcome.pools if u.name == "kp")
    assert (use.nodes, use.added, use.limit) == (4 - 1, 1, 3)
    (failure,) = result.moments[-1].outcome.failures
    assert "pool kp: karpenter kp-np is at its limit of 3 node(s)" in failure.reason
    assert "the snapshot has no ResourceClaims: devices already allocated are unknown" in result.notes


def test_gpu_nodes_no_pool_selects_keep_their_snapshot_mode(tmp_path: Path) -> None:
    # GIVEN a GPU node no pool names, and two pods of another team running there
    p = lab()
    nodes = [*lab_nodes(p, {"old-00": "8", "old-01": "8"}), node("other-01", gpus="8")]
    batch = [pod(f"batch-{i}", "ml", "other-01", gpus=4) for i in range(2)]
    result = capacity(p, "cutover", snapshot(tmp_path, p, {}, nodes=nodes, pods=batch))
    # THEN it stays a device-plugin node in the cutover and serves them
    assert result.fits
    assert pools(result)["(no pool), device plugin"] == ("legacy", 8, 0, "snapshot")


def test_a_cordoned_node_takes_no_pod(tmp_path: Path) -> None:
    p = lab(workloads=[workload("train", 2, 8)])
    nodes = lab_nodes(p, {"old-00": "8", "old-01": "8"})
    nodes[1]["spec"] = {"unschedulable": True}
    (failure,) = capacity(p, "pilot", snapshot(tmp_path, p, {}, nodes=nodes)).moments[-1].outcome.failures
    assert failure.placed == 1


def test_alike_nodes_form_one_group_however_many_there_are(tmp_path: Path) -> None:
    from gpuplatform.capacity.held import Held
    from gpuplatform.capacity.snapshot import Reads, read_nodes, snapshot_fleet, snapshot_slices
    from gpuplatform.snapshot.read import load_snapshot

    p = lab(pools=[pool("old", 40), pool("new", 30, migrates_in="pilot")])
    nodes = [node(f"old-{i:02d}", gpus="8", labels={MODE: "legacy"}) for i in range(40)]
    slices: list[dict[str, Any]] = []
    for i in range(30):
        found, published = dra_node(f"new-{i:02d}", p)
        nodes.append(found)
        slices += published
    folder = Cluster(kinds={"nodes": nodes, "resourceslices": slices}).write(tmp_path / "snap")
    snap = load_snapshot(folder)
    reads = Reads(frozenset({MODE}), frozenset({"architecture", "productName", "type", "memory"}))
    fleet = snapshot_fleet(p, snap, read_nodes(snap, snapshot_slices(snap)), Held({}, {}), reads, "lab.py")
    old, new = fleet.pools
    assert [g.count for g in old.groups["legacy"]] == [40]
    assert [g.count for g in new.groups["dra"]] == [30]  # their uuids and PCI addresses differ


def test_a_bad_resource_slice_is_an_input_error_naming_the_file_and_item(tmp_path: Path) -> None:
    p = lab()
    folder = snapshot(
        tmp_path,
        p,
        {"old-00": "8"},
        resourceslices=[{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}],
    )
    with pytest.raises(InputError) as raised:
        capacity(p, "base", folder)
    (problem,) = raised.value.problems
    assert problem.file.endswith("resourceslices.json") and problem.loc == "items[0].apiVersion"


def test_a_pods_only_snapshot_keeps_the_modelled_fleet_and_says_so(tmp_path: Path) -> None:
    p = lab()
    pods = tmp_path / "pods.json"
    pods.write_text('{"apiVersion": "v1", "kind": "List", "items": []}')
    result = capacity(p, "base", str(pods))
    assert "the snapshot has no nodes: capacity is modelled from the spec" in result.notes
    assert pools(result)["old"][3] == "model"
    pods.write_text('{"items": [{"metadata": {"name": "p"}, "spec": {"resourceClaims": "gpu"}}]}')
    with pytest.raises(InputError) as raised:
        capacity(p, "base", str(pods))
    assert (raised.value.problems[0].file, raised.value.problems[0].loc) == (
        str(pods),
        "items[0].spec.resourceClaims",
    )


@pytest.mark.parametrize(
    ("kind", "broken", "loc"),
    [
        (
            "nodes",
            {"metadata": {"name": "old-00"}, "spec": {"taints": "gpu:NoSchedule"}},
            "items[0].spec.taints",
        ),
        ("nodes", {"metadata": {"name": "old-00", "labels": ["a"]}}, "items[0].metadata.labels"),
        (
            "resourceclaims",
            {"metadata": {"name": "c"}, "status": {"reservedFor": "pod-a"}},
            "items[0].status.reservedFor",
        ),
        (
            "pods",
            {"metadata": {"name": "p"}, "spec": {"resourceClaims": {"gpu": 1}}},
            "items[0].spec.resourceClaims",
        ),
    ],
)
def test_a_malformed_snapshot_field_is_an_input_error_naming_file_and_field(
    tmp_path: Path, kind: str, broken: dict[str, Any], loc: str
) -> None:
    p = lab()
    folder = snapshot(tmp_path, p, {"old-00": "8"}, **{kind: [broken]})
    with pytest.raises(InputError) as raised:
        capacity(p, "base", folder)
    (problem,) = raised.value.problems
    assert problem.file.endswith(f"{kind}.json") and problem.loc == loc
