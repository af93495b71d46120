"""`capacity` honours Kueue quotas: queued Jobs beyond their ClusterQueue's quota do not fit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from gpuplatform.capacity.verdicts import capacity_problems, capacity_verdicts
from gpuplatform.load.stacks import load_stack
from gpuplatform.plan.waves import plan_platform
from tests.conftest import REPO
from tests.specs import write_spec


def _loaded(tmp_path: Path, quotas: dict[str, int]) -> Any:
    doc: dict[str, Any] = yaml.safe_load((REPO / "stacks" / "kueue-fleet.yaml").read_text())
    doc["spec"]["kueue"]["clusterQueues"][0]["quotas"] = quotas
    (loaded,) = load_stack(write_spec(tmp_path / "lab.yaml", doc))
    return loaded


def test_the_bundled_quotas_admit_every_wave(tmp_path: Path) -> None:
    verdicts = capacity_verdicts(plan_platform(_loaded(tmp_path, {"h100": 16, "a100": 8}).platform))
    assert {name: v.kueue for name, v in verdicts.items()} == dict.fromkeys(verdicts, ())
    assert all(v.fits for v in verdicts.values())


def test_too_little_dra_quota_when_the_job_converts_does_not_fit(tmp_path: Path) -> None:
    loaded = _loaded(tmp_path, {"h100": 4, "a100": 8})
    verdicts = capacity_verdicts(plan_platform(loaded.platform))
    assert not verdicts["apps"].fits
    assert verdicts["apps"].kueue == (
        "Kueue: ClusterQueue training admits 4 fleet.example.com/gpu, its queued Jobs ask for 8: 4 stay suspended",
    )
    assert verdicts["validate"].fits  # the legacy Job still fits in 8 nvidia.com/gpu of a100
    assert [p.loc for p in capacity_problems(loaded) if p.code == "GP280"] == [
        "spec.waves[3]"
    ]  # cutover: 12 on DRA pools


def test_legacy_quota_too_small_before_the_move(tmp_path: Path) -> None:
    verdicts = capacity_verdicts(plan_platform(_loaded(tmp_path, {"h100": 20, "a100": 4}).platform))
    assert "admits 4 nvidia.com/gpu" in verdicts["pilot"].kueue[0]


def test_a_job_without_queue_is_not_held_by_the_quota(tmp_path: Path) -> None:
    doc: dict[str, Any] = yaml.safe_load((REPO / "stacks" / "kueue-fleet.yaml").read_text())
    doc["spec"]["kueue"]["clusterQueues"][0]["quotas"] = {"h100": 4, "a100": 8}
    del doc["spec"]["workloads"][0]["queue"]
    (loaded,) = load_stack(write_spec(tmp_path / "lab.yaml", doc))
    verdicts = capacity_verdicts(plan_platform(loaded.platform))
    assert verdicts["apps"].kueue == ()


def test_a_job_with_no_replicas_asks_for_no_quota(tmp_path: Path) -> None:
    # GIVEN the queued training Job scaled to none (an overlay's `replicas: 0`) and too little DRA quota
    doc: dict[str, Any] = yaml.safe_load((REPO / "stacks" / "kueue-fleet.yaml").read_text())
    doc["spec"]["kueue"]["clusterQueues"][0]["quotas"] = {"h100": 4, "a100": 8}
    doc["spec"]["workloads"][0]["replicas"] = 0
    (loaded,) = load_stack(write_spec(tmp_path / "lab.yaml", doc))
    # THEN no pod of it waits for admission: nothing stays suspended (it counted as 8 GPUs)
    verdicts = capacity_verdicts(plan_platform(loaded.platform))
    assert all(v.kueue == () for v in verdicts.values())
    assert [p for p in capacity_problems(loaded) if p.code == "GP280"] == []
