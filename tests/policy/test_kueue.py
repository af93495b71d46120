"""Kueue admission rules: GP400-GP405, each broken by one change to the bundled Kueue stack."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuplatform.errors import InputError
from gpuplatform.kueue import render as render_kueue_module
from gpuplatform.kueue.rules import rendered_quota_totals
from gpuplatform.load.stacks import load_stack
from gpuplatform.plan.waves import plan_platform
from gpuplatform.policy.rules import run_rules
from tests.conftest import REPO
from tests.policy.helpers import codes, findings
from tests.specs import write_spec


def _stack() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((REPO / "stacks" / "kueue-fleet.yaml").read_text())
    return doc


def _kueue(doc: dict[str, Any]) -> dict[str, Any]:
    kueue: dict[str, Any] = doc["spec"]["kueue"]
    return kueue


def test_the_bundled_stack_passes_every_kueue_rule(tmp_path: Path) -> None:
    assert not {c for c in codes(tmp_path, _stack()) if c.startswith("GP40")}


@pytest.mark.parametrize(("version", "fires"), [("0.14.2", True), ("0.15.0", False)])
def test_gp400_kueue_without_v1beta2_dra(tmp_path: Path, version: str, fires: bool) -> None:
    doc = _stack()
    _kueue(doc).update(version=version, featureGates={"DynamicResourceAllocation": True})
    assert ("GP400" in codes(tmp_path, doc)) is fires


def test_gp401_dra_gate_off_before_0_18(tmp_path: Path) -> None:
    doc = _stack()
    _kueue(doc).update(version="0.17.0", featureGates={"DynamicResourceAllocation": False})
    found = [p for p in findings(tmp_path, doc) if p.code == "GP401"]
    assert [p.loc for p in found] == ["spec.kueue.featureGates.DynamicResourceAllocation"]


def test_gp401_locked_gate_set_from_0_18(tmp_path: Path) -> None:
    doc = _stack()
    _kueue(doc)["featureGates"] = {"DynamicResourceAllocation": True}
    assert "GP401" in codes(tmp_path, doc)


def test_gp402_job_converted_while_its_queue_has_no_dra_quota(tmp_path: Path) -> None:
    doc = _stack()
    _kueue(doc)["clusterQueues"][0]["quotas"] = {"h100": 4, "a100": 8}
    found = [p for p in findings(tmp_path, doc) if p.code == "GP402"]
    assert {p.loc for p in found} == {"spec.workloads[0]"}
    assert "stays suspended" in found[0].message


def test_gp403_class_of_a_queued_tenant_not_mapped(tmp_path: Path) -> None:
    doc = _stack()
    doc["spec"]["tiers"].append({"name": "hopper", "architecture": "Hopper"})
    doc["spec"]["tenants"][0]["tiers"].append("hopper")
    doc["spec"]["tenants"][0]["quota"]["tiers"] = {"hopper": 8}
    doc["spec"]["waves"][3]["tiers"].append("hopper")
    _kueue(doc)["mappedTiers"] = ["any-gpu"]
    found = [p for p in findings(tmp_path, doc) if p.code == "GP403"]
    assert found and all("hopper.fleet.example.com" in p.message for p in found)
    _kueue(doc)["mappedTiers"] = ["any-gpu", "hopper"]
    (tmp_path / "ok").mkdir()
    assert "GP403" not in codes(tmp_path / "ok", doc)


def test_gp404_rendered_total_differs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A renderer that leaves a moved pool's quota on `nvidia.com/gpu` as well over-admits."""
    (loaded,) = load_stack(write_spec(tmp_path / "lab.yaml", _stack()))
    plan = plan_platform(loaded.platform)
    assert {rendered_quota_totals(plan, s)["training"] for s in plan.waves} == {24}
    original = render_kueue_module._cluster_queue

    def both(*args: Any) -> dict[str, Any]:
        obj = original(*args)
        groups = [g for g in obj["spec"]["resourceGroups"] if "cpu" not in g["coveredResources"]]
        if len(groups) == 2:  # the GPU groups (the queue's cpu and memory have their own)
            groups[0]["flavors"] = groups[0]["flavors"] + groups[1]["flavors"]
        return obj

    monkeypatch.setattr(render_kueue_module, "_cluster_queue", both)
    found = [p for p in run_rules(loaded) if p.code == "GP404"]
    assert found and "over-admits" in found[0].message


def test_gp405_quota_beyond_the_pool(tmp_path: Path) -> None:
    doc = _stack()
    _kueue(doc)["clusterQueues"][0]["quotas"]["a100"] = 9
    found = [p for p in findings(tmp_path, doc) if p.code == "GP405"]
    assert [p.loc for p in found] == ["spec.nodePools[1]"]


def test_unknown_pool_in_quotas_is_a_located_error(tmp_path: Path) -> None:
    doc = _stack()
    _kueue(doc)["clusterQueues"][0]["quotas"]["b200"] = 8
    with pytest.raises(InputError) as err:
        load_stack(write_spec(tmp_path / "lab.yaml", doc))
    assert "nodePool 'b200'" in str(err.value)


def test_gp402_judges_only_a_job_submitted_to_a_queue(tmp_path: Path) -> None:
    """A Job without `queue` (no `kueue.x-k8s.io/queue-name`) is not admitted by Kueue: no quota holds it."""
    doc = _stack()
    _kueue(doc)["clusterQueues"][0]["quotas"] = {"h100": 4, "a100": 8}
    del doc["spec"]["workloads"][0]["queue"]
    assert "GP402" not in codes(tmp_path, doc)


def test_gp402_names_the_local_queue_the_job_goes_through(tmp_path: Path) -> None:
    doc = _stack()
    _kueue(doc)["clusterQueues"][0].update(quotas={"h100": 4, "a100": 8}, localQueue="batch")
    doc["spec"]["workloads"][0]["queue"] = "batch"
    found = [p for p in findings(tmp_path, doc) if p.code == "GP402"]
    assert [p.loc for p in found] == ["spec.workloads[0]"]
    assert "ClusterQueue training (LocalQueue batch)" in found[0].message


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"queue": "batch"},
            "LocalQueue 'batch' is not rendered: the LocalQueues of namespace training are training",
        ),
        ({"namespace": "other", "queue": "training"}, "spec.kueue renders no LocalQueue in namespace other"),
    ],
)
def test_a_queue_no_local_queue_renders_is_a_located_error(
    tmp_path: Path, change: dict[str, str], message: str
) -> None:
    doc = _stack()
    doc["spec"]["workloads"][0].update(change)
    with pytest.raises(InputError) as err:
        load_stack(write_spec(tmp_path / "lab.yaml", doc))
    [problem] = err.value.problems
    assert problem.loc == "spec.workloads[0].queue"
    assert message in problem.message


def test_a_queue_without_spec_kueue_is_a_located_error(tmp_path: Path) -> None:
    doc = _stack()
    del doc["spec"]["kueue"]
    with pytest.raises(InputError) as err:
        load_stack(write_spec(tmp_path / "lab.yaml", doc))
    assert "(no spec.kueue)" in str(err.value)


def test_a_queue_on_a_kind_kueue_jobs_do_not_cover_is_refused(tmp_path: Path) -> None:
    doc = _stack()
    doc["spec"]["workloads"][0]["kind"] = "Deployment"
    with pytest.raises(InputError) as err:
        load_stack(write_spec(tmp_path / "lab.yaml", doc))
    assert "batch/v1 Job integration only" in str(err.value)


def test_gp405_counts_the_nodes_a_pool_gives_to_a_new_group(tmp_path: Path) -> None:
    # GIVEN the A100 pool as a 2-node GKE group whose queue holds 12 of its 16 GPUs
    doc = _stack()
    doc["spec"]["nodePools"][1] = {
        "name": "a100",
        "product": "A100-40GB",
        "provisioner": {"kind": "node-group", "cloud": "gke", "name": "a100", "maxNodes": 2},
    }
    _kueue(doc)["clusterQueues"][0]["quotas"]["a100"] = 12
    assert "GP405" not in codes(tmp_path, doc)
    # WHEN a new DRA group takes one of its nodes in pilot: 8 GPUs are left for 12 of quota
    doc["spec"]["nodePools"].append(
        {
            "name": "a100-dra",
            "product": "A100-40GB",
            "provisioner": {"kind": "node-group", "cloud": "gke", "name": "a100-dra"},
            "takesOverFrom": "a100",
            "migratesIn": "pilot",
        }
    )
    found = [p for p in findings(tmp_path, doc) if p.code == "GP405"]
    assert [(p.loc, "which has 8" in p.message) for p in found] == [("spec.nodePools[1]", True)]
