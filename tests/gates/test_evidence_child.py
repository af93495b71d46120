"""evidence with its forked child (the ResourceSlices read and summed up, the tiers' and bridges'
selector matches counted, while the parent judges the other kinds) judges exactly as a plain run."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuplatform import background
from gpuplatform.errors import InputError
from gpuplatform.evidence.evaluate import evaluate_wave
from gpuplatform.plan.waves import plan_platform
from gpuplatform.snapshot.read import load_snapshot
from gpuplatform.testing import wave_cluster
from tests.forks import count_forks
from tests.gates.harness import fleet_doc, load_platform

pytestmark = [
    pytest.mark.skipif(not background.can_fork(), reason="needs fork and two cores"),
    pytest.mark.usefixtures("cli_runtime"),
]


@pytest.mark.parametrize("devices", ["published", "none"])
def test_the_child_changes_no_verdict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, devices: str) -> None:
    # GIVEN a snapshot of a wave with tiers: healthy, or with no device published at all
    platform = load_platform(tmp_path, fleet_doc())
    plan = plan_platform(platform)
    cluster = wave_cluster(platform, "app")
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


def test_a_slices_file_the_child_cannot_read_is_refused_as_in_a_plain_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a snapshot whose ResourceSlices file is not `kubectl get -o json` output
    platform = load_platform(tmp_path, fleet_doc())
    plan = plan_platform(platform)
    folder = wave_cluster(platform, "app").write(tmp_path / "snap")
    (folder / "resourceslices.json").write_text('{"items": "none"}')
    # WHEN the wave is judged with the child and without / THEN the same error, naming the file
    errors = []
    for fork in (True, False):
        monkeypatch.setattr(background, "can_fork", lambda fork=fork: fork)
        with pytest.raises(InputError) as caught:
            evaluate_wave(plan, plan.wave("app"), load_snapshot(folder))
        errors.append(caught.value.problems)
    assert errors[0] == errors[1]
    assert errors[0][0].file.endswith("resourceslices.json")
