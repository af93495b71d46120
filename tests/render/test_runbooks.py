"""Runbooks: one per wave, real names, the rollback in the safe order."""

from __future__ import annotations

import pytest
from syrupy.assertion import SnapshotAssertion

from gpuplatform.model import Platform
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.runbooks import render_runbooks


@pytest.mark.parametrize(
    "wave", ["00-baseline.md", "01-pilot-pool.md", "03-native-claim-pilot.md", "06-final-cutover.md"]
)
def test_runbook_snapshot(reference: Platform, wave: str, text_snapshot: SnapshotAssertion) -> None:
    assert render_runbooks(plan_platform(reference))[wave] == text_snapshot


def test_pilot_pool_runbook_names_labels_taints_and_the_driver(reference: Platform) -> None:
    text = render_runbooks(plan_platform(reference))["01-pilot-pool.md"]
    assert "kubectl taint nodes gpu-dra-01 gpu-scheduling.platform.example.com/mode=dra:NoSchedule" in text
    assert "nvidia.com/dra-kubelet-plugin=true" in text
    assert "kubectl get resourceslice -o yaml" in text
    assert "nvidia-device-plugin-daemonset" in text


def test_rollback_steps_come_in_the_safe_order(reference: Platform) -> None:
    text = render_runbooks(plan_platform(reference))["01-pilot-pool.md"].split("## Rollback")[1]
    steps = [
        "kubectl cordon",
        "claims are released",
        "removes `nvidia.com/dra-kubelet-plugin`",
        "legacy manifests",
        "remove the DRA taint",
        "kubectl uncordon",
        "uninstalled only now",
    ]
    positions = [text.index(s) for s in steps]
    assert positions == sorted(positions)


def test_claim_pilot_runbook_checks_runtime_identity(reference: Platform) -> None:
    text = render_runbooks(plan_platform(reference))["03-native-claim-pilot.md"]
    assert "kubectl -n gpu-dra-pilot logs job/gpu-dra-validation" in text
    assert "UUID" in text
