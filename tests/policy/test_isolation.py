"""Tenant isolation rules (GP260-GP265), each with a spec that passes and one that breaks it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from gpuplatform.cli import main
from gpuplatform.testing import Cluster, node, pod
from tests.admission.lab import DB_WORKLOAD, lab_spec
from tests.policy.helpers import codes, findings
from tests.specs import write_spec


def test_the_lab_passes_every_isolation_rule(tmp_path: Path) -> None:
    assert {c for c in codes(tmp_path, lab_spec()) if c.startswith("GP26")} == {"GP268"}  # the info note


def test_a_workload_moving_into_an_undeclared_namespace(tmp_path: Path) -> None:
    doc = lab_spec()
    doc["spec"]["workloads"][0]["namespace"] = "legacy-apps"
    [found] = [p for p in findings(tmp_path, doc) if p.code == "GP260"]
    assert found.loc == "spec.workloads[0].namespace"
    doc["spec"]["tenantPolicy"]["allowNamespaces"].append("legacy-apps")
    assert "GP260" not in codes(tmp_path, doc)


def test_a_workload_moving_before_its_tenant_is_enabled(tmp_path: Path) -> None:
    doc = lab_spec()
    doc["spec"]["workloads"][0].update(namespace="team-b", movesIn="nim")
    assert "GP260" in codes(tmp_path, doc)
    doc["spec"]["workloads"][0]["movesIn"] = "app"
    assert "GP260" not in codes(tmp_path, doc)


def test_a_nim_service_on_a_tier_its_tenant_may_not_use(tmp_path: Path) -> None:
    doc = lab_spec()
    doc["spec"]["tenants"][0]["tiers"] = ["full"]
    [found] = [p for p in findings(tmp_path, doc) if p.code == "GP261"]
    assert found.loc == "spec.nimServices[0].tier"
    del doc["spec"]["nimServices"][0]["tier"]
    assert any("gpu.nvidia.com" in p.message for p in findings(tmp_path, doc) if p.code == "GP261")


def test_cluster_admin_for_a_tenant_gitops_identity(tmp_path: Path) -> None:
    doc = lab_spec()
    doc["spec"]["tenants"][0]["gitops"] = {"clusterRoles": ["edit"]}
    assert "GP262" not in codes(tmp_path, doc)
    doc["spec"]["tenants"][0]["gitops"] = {"clusterRoles": ["edit", "cluster-admin"]}
    [found] = [p for p in findings(tmp_path, doc) if p.code == "GP262"]
    assert found.loc == "spec.tenants[0].gitops.clusterRoles[1]"


def test_blue_green_nim_services_sharing_a_cache_across_products(tmp_path: Path) -> None:
    (tmp_path / "llm.yaml").write_text(
        "apiVersion: apps.nvidia.com/v1alpha1\nkind: NIMService\nmetadata: {name: llm, namespace: team-a}\n"
        "spec:\n  storage:\n    nimCache: {name: llm-cache, profile: ''}\n  resources: {limits: {nvidia.com/gpu: 1}}\n"
    )
    doc = lab_spec()
    doc["spec"]["nimServices"][0]["manifest"] = "llm.yaml"
    assert "GP263" not in codes(tmp_path, doc)  # the default cache is the new service's own
    doc["spec"]["nimServices"][0]["cache"] = "llm-cache"  # A100 (legacy) and H100 (DRA) on one cache
    [found] = [p for p in findings(tmp_path, doc) if p.code == "GP263"]
    assert "A100-40GB" in found.message and "H100-80GB" in found.message


def _snapshot(folder: Path, pods: list[dict[str, Any]]) -> Path:
    return Cluster(kinds={"nodes": [node("gpu-01", gpus="4"), node("gpu-02", gpus="0")], "pods": pods}).write(
        folder
    )


def _running(name: str, gpus: int, count: int, owner: str = "") -> list[dict[str, Any]]:
    """`count` pods of a StatefulSet (`owner: StatefulSet`), a Deployment (`owner: Deployment`) or bare."""
    kind, labels = owner, {}
    if owner == "Deployment":
        kind, labels = "ReplicaSet", {"pod-template-hash": "5c6d"}
    owners = (
        [{"kind": kind, "name": f"{name}-5c6d" if labels else name, "controller": True}] if owner else None
    )
    return [
        pod(f"{name}-{i}", "team-a", "gpu-01", gpus=gpus, owners=owners, labels=labels) for i in range(count)
    ]


def _check(tmp_path: Path, doc: dict[str, Any], pods: list[dict[str, Any]]) -> dict[str, list[str]]:
    spec = write_spec(tmp_path / "lab.yaml", doc)
    snapshot = _snapshot(tmp_path / "snap", pods)
    result = CliRunner().invoke(main, ["check", str(spec), "--snapshot", str(snapshot), "--format", "json"])
    found: dict[str, list[str]] = {}
    for problem in json.loads(result.stdout)[0]["problems"]:
        found.setdefault(problem["code"], []).append(problem["message"] + " | " + problem["hint"])
    return found


def _db_spec(active: str) -> dict[str, Any]:
    return lab_spec(workloads=[DB_WORKLOAD], activeWave=active)


def test_check_snapshot_reports_a_quota_that_refuses_running_workloads(tmp_path: Path) -> None:
    # GIVEN db (3 x 1 GPU, declared, moves in `claims`) and llm's NIM pod (1 GPU) run in team-a
    running = _running("db", 1, 3, owner="StatefulSet") + _running("llm", 1, 1, owner="Deployment")
    # THEN the quota of `nim` (db 3 + llm 2 with its surge) covers them
    assert "GP264" not in _check(tmp_path, _db_spec("nim"), running)
    # and the next wave's (db covered only until the wave after `claims`) is reported
    [warning] = _check(tmp_path, _db_spec("nim"), running)["GP265"]
    assert "wave 'app'" in warning and "StatefulSet/db: 3" in warning
    # WHEN a notebook the spec does not declare also runs there
    found = _check(tmp_path, _db_spec("nim"), running + _running("notebook", 4, 1))
    # THEN the active wave's quota refuses it, and the hint names it
    [error] = found["GP264"]
    assert (
        "allows 5 nvidia.com/gpu but 8 run there" in error
        and "declare Pod/notebook-0 in spec.workloads" in error
    )


def test_finished_pods_do_not_count(tmp_path: Path) -> None:
    done = [pod("batch-0", "team-a", "gpu-01", gpus=8, phase="Succeeded")]
    assert "GP264" not in _check(tmp_path, _db_spec("nim"), done)


def test_a_manifest_with_more_replicas_than_the_spec(tmp_path: Path) -> None:
    (tmp_path / "trainer.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: trainer, namespace: team-a}\nspec:\n  replicas: 4\n"
        "  template:\n    spec:\n      containers:\n      - {name: a, image: x, resources: {limits: {nvidia.com/gpu: 1}}}\n"
        "      - {name: b, image: x, resources: {limits: {nvidia.com/gpu: 1}}}\n"
    )
    doc = lab_spec()
    doc["spec"]["workloads"][0]["manifest"] = "trainer.yaml"
    assert "GP266" not in codes(tmp_path, doc)  # 4 replicas x 2 GPUs, as the spec says
    doc["spec"]["workloads"][0].update(replicas=3, gpus=1)
    assert {p.loc for p in findings(tmp_path, doc) if p.code == "GP266"} == {
        "spec.workloads[0].gpus",
        "spec.workloads[0].replicas",
    }


def test_templates_before_their_tier_is_published(tmp_path: Path) -> None:
    doc = lab_spec()
    claims = doc["spec"]["waves"][2]
    claims["tiers"] = ["full"]
    doc["spec"]["waves"][4]["tiers"] = ["hopper"]  # hopper is published only in `app`
    found = {p.loc: p.message for p in findings(tmp_path, doc) if p.code == "GP261"}
    assert set(found) == {"spec.nimServices[0].tier", "spec.tenants[0].claimTemplates[1].tier"}
    assert "before tier 'hopper' is published" in found["spec.nimServices[0].tier"]


def test_check_says_what_the_quota_adds_and_what_it_does_not_cover(tmp_path: Path) -> None:
    # GIVEN team-a opted in: check notes the addition per wave, with the workloads
    notes = [p.message for p in findings(tmp_path, lab_spec()) if p.code == "GP268"]
    assert any(
        "wave 'claims'" in n and "quota.gpus 0 + 12" in n and "Deployment/trainer: 10" in n for n in notes
    )
    # WHEN team-a types 4 GPUs without the opt-in: its declared workloads (12) are not covered
    doc = lab_spec()
    doc["spec"]["tenants"][0]["quota"] = {"gpus": 4}
    found = [p for p in findings(tmp_path, doc) if p.code in ("GP267", "GP268")]
    assert found and {p.code for p in found} == {"GP267"}
    assert found[0].loc == "spec.tenants[0].quota.gpus" and "raise quota.gpus to 12" in found[0].hint
    # and with 12 typed, nothing is said
    doc["spec"]["tenants"][0]["quota"] = {"gpus": 12}
    assert not {"GP267", "GP268"} & codes(tmp_path, doc)


def test_gp264_without_the_opt_in_says_how_to_cover_running_pods(tmp_path: Path) -> None:
    doc = _db_spec("nim")
    doc["spec"]["tenants"][0]["quota"] = {"gpus": 2}
    [error] = _check(tmp_path, doc, _running("db", 1, 3, owner="StatefulSet"))["GP264"]
    assert "allows 2 nvidia.com/gpu but 3 run there" in error
    assert (
        "set quota.legacyWorkloads: true (it covers them until they move), or raise quota.gpus to 3" in error
    )


def test_gp264_for_declared_workloads_past_their_move_says_to_move_them(tmp_path: Path) -> None:
    # GIVEN db is declared (moves in `claims`) and still runs on the device plugin in `app`, after the
    # wave its quota covers it to
    [error] = _check(tmp_path, _db_spec("app"), _running("db", 1, 3, owner="StatefulSet"))["GP264"]
    # THEN the hint does not ask to declare what is declared
    assert "declare " not in error.split(" | ")[1]
    assert "move them to claims, or raise quota.gpus to 3" in error
