"""The operands gate asks for the DRA driver's controller exactly where the release renders it.

Chart 0.4.1 (and 25.12.0) renders its controller Deployment only under
`if .Values.resources.computeDomains.enabled` (templates/controller.yaml); the release renders
`resources.computeDomains.enabled: false` unless the spec enables ComputeDomains. The gate's fact
comes from the chart facts for the values the release renders, and the fixtures are built the same
way, so a cluster the real chart builds passes and one missing a rendered controller does not.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpuplatform.model.platform import Platform
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.gate_facts import wave_data
from gpuplatform.render.validation import validation_jobs
from gpuplatform.testing import wave_cluster
from tests.gates.harness import in_cluster, offline

WAVE = "native-claim-pilot"


def _controller(pod: dict[str, Any]) -> bool:
    """The DRA driver controller's pod, by the label its Deployment's template gives it."""
    return pod["metadata"]["labels"].get("dra-driver-nvidia-gpu-component") == "controller"


def _with_domains(platform: Platform, enabled: bool) -> Platform:
    driver = platform.dra_driver.model_copy(update={"compute_domains": enabled})
    return platform.model_copy(update={"dra_driver": driver})


@pytest.mark.parametrize("enabled", [False, True])
def test_the_fact_follows_the_values_the_release_renders(reference: Platform, enabled: bool) -> None:
    platform = _with_domains(reference, enabled)
    plan = plan_platform(platform)
    state = plan.wave(WAVE)
    assert wave_data(plan, state, validation_jobs(plan, state).data)["driverController"] is enabled


def test_team_values_that_the_release_overrides_do_not_decide(reference: Platform) -> None:
    """A team's `resources.computeDomains.enabled: true` is overridden by the spec's own switch."""
    driver = reference.dra_driver.model_copy(
        update={"values": {"resources": {"computeDomains": {"enabled": True}}}, "compute_domains": False}
    )
    plan = plan_platform(reference.model_copy(update={"dra_driver": driver}))
    state = plan.wave(WAVE)
    assert wave_data(plan, state, validation_jobs(plan, state).data)["driverController"] is False


@pytest.mark.parametrize("enabled", [False, True])
def test_a_cluster_the_chart_builds_passes_operands(
    reference: Platform, tmp_path: Path, enabled: bool
) -> None:
    platform = _with_domains(reference, enabled)
    cluster = wave_cluster(platform, WAVE)
    assert any(_controller(p) for p in cluster.list("pods")) is enabled
    assert offline(platform, WAVE, "operands", cluster, tmp_path / "a").status == "held"
    assert in_cluster(platform, WAVE, "operands", cluster, tmp_path / "b").returncode == 0


def test_a_missing_rendered_controller_breaks_operands(reference: Platform, tmp_path: Path) -> None:
    platform = _with_domains(reference, True)
    cluster = wave_cluster(platform, WAVE)
    cluster.kinds["pods"] = [p for p in cluster.list("pods") if not _controller(p)]
    assert offline(platform, WAVE, "operands", cluster, tmp_path / "a").status != "held"
    run = in_cluster(platform, WAVE, "operands", cluster, tmp_path / "b")
    assert run.returncode == 3 and "controller" in run.stderr
