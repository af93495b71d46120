"""Kueue admission in `simulate`: a converted Job its ClusterQueue cannot admit stays suspended, which
is `workload-disrupted` even though the wave moves it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.conftest import REPO
from tests.simulate.helpers import simulate, violations


def _stack() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((REPO / "stacks" / "kueue-fleet.yaml").read_text())
    return doc


def test_every_wave_of_the_kueue_fleet_admits_its_jobs(tmp_path: Path) -> None:
    report = simulate(tmp_path, _stack(), "validate", "apps", engines=("argocd",))
    assert violations(report) == []


def test_a_converted_job_without_dra_quota_stays_suspended(tmp_path: Path) -> None:
    doc = _stack()
    doc["spec"]["kueue"]["clusterQueues"][0]["quotas"] = {"h100": 4, "a100": 8}
    report = simulate(tmp_path, doc, "validate", "apps", engines=("argocd",))
    found = violations(report, late=False)
    assert [v.invariant for *_, v in found] == ["workload-disrupted"]
    assert (
        "Kueue keeps it suspended: ClusterQueue training has 4 fleet.example.com/gpu free"
        in found[0][3].message
    )


def test_an_unmapped_class_keeps_the_job_suspended(tmp_path: Path) -> None:
    doc = _stack()
    doc["spec"]["tiers"].append({"name": "other", "deviceType": "gpu"})
    doc["spec"]["kueue"]["mappedTiers"] = ["other"]
    report = simulate(tmp_path, doc, "validate", "apps", engines=("argocd",))
    found = violations(report, late=False)
    assert found and "is not mapped in its DRA configuration" in found[0][3].message


def test_a_job_without_queue_is_not_suspended_by_kueue(tmp_path: Path) -> None:
    doc = _stack()
    doc["spec"]["kueue"]["clusterQueues"][0]["quotas"] = {"h100": 4, "a100": 8}
    del doc["spec"]["workloads"][0]["queue"]
    report = simulate(tmp_path, doc, "validate", "apps", engines=("argocd",))
    assert not [v for *_, v in violations(report, late=False) if "Kueue" in v.message]
