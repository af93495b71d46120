"""The plan report: per wave what exists and what changed."""

from __future__ import annotations

from gpuplatform.model import Platform
from gpuplatform.plan.report import plan_report, plan_text
from gpuplatform.plan.waves import plan_platform


def test_reference_report_changes(reference: Platform) -> None:
    report = plan_report(plan_platform(reference))
    changes = {w["wave"]: w["changes"] for w in report["waves"]}
    assert changes["pilot-pool"][:2] == ["pool dra-pilot: legacy -> dra", "DRA driver installed"]
    assert "rendered without extendedResourceName" in changes["pilot-pool"][2]
    assert changes["driver-validation"] == []
    assert changes["native-claim-pilot"] == [
        "+ class nvidia-hopper-large-memory.platform.example.com",
        "+ tenant gpu-dra-pilot",
        "+ claim template gpu-dra-pilot/hopper-large-gpu",
        "+ validation workload",
    ]
    assert changes["final-cutover"] == ["pool legacy: legacy -> dra", "GPU Operator device plugin disabled"]
    assert [w["active"] for w in report["waves"]].count(True) == 1


def test_text_marks_the_active_wave(reference: Platform) -> None:
    text = plan_text(plan_report(plan_platform(reference)))
    assert "03-native-claim-pilot  [native-claim-pilot]  <- active" in text
    assert "  DRA pools:       dra-pilot" in text
