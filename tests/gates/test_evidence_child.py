"""evidence with its forked child (the tiers' and bridges' selector matches counted while jq runs)
judges exactly as a plain run."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuplatform import background
from gpuplatform.evidence.snapshot import load_snapshot
from gpuplatform.gates.evaluate import evaluate_wave
from gpuplatform.plan.waves import plan_platform
from tests.evidence.builders import build
from tests.forks import count_forks
from tests.gates.harness import fleet_doc, load_platform

pytestmark = pytest.mark.skipif(not background.can_fork(), reason="needs fork and two cores")


@pytest.mark.parametrize("devices", ["published", "none"])
def test_the_child_changes_no_verdict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, devices: str) -> None:
    # GIVEN a snapshot of a wave with tiers: healthy, or with no device published at all
    platform = load_platform(tmp_path, fleet_doc())
    plan = plan_platform(platform)
    cluster = build(platform, "app")
    if devices == "none":
        for item in cluster.list("resourceslices"):
            item["spec"]["devices"] = []
    snapshot = load_snapshot(cluster.write(tmp_path / "snap"))
    # WHEN the wave is judged with the child and without
    forked = count_forks(monkeypatch)
    child = [r.as_dict() for r in evaluate_wave(plan, plan.wave("app"), snapshot)]
    assert forked, "evidence did not fork"
    monkeypatch.setattr(background, "can_fork", lambda: False)
    plain = [r.as_dict() for r in evaluate_wave(plan, plan.wave("app"), snapshot)]
    # THEN every verdict is the same, the tiers' included
    assert child == plain
    inventory = next(r for r in plain if r["id"] == "inventory")
    tiers = [line for line in inventory["proof"] + inventory["findings"] if line.startswith("tier ")]
    assert tiers
    if devices == "none":
        assert all("matches no device" in line for line in tiers)
