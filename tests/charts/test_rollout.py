"""The kubelet plugin's startup budget is what every reference chart's startup probe allows."""

from __future__ import annotations

import re

import pytest

from gpuplatform.charts.rollout import KUBELET_PLUGIN_STARTUP_SECONDS
from tests.conftest import SHARED

CHARTS = SHARED / "reference" / "charts"


def test_every_kubelet_plugin_startup_probe_allows_the_budget() -> None:
    templates = sorted(CHARTS.glob("*dra-driver*/templates/kubeletplugin.yaml"))
    if not templates:
        pytest.skip(f"no DRA driver charts at {CHARTS}")
    for template in templates:
        probes = re.findall(
            r"startupProbe:\n(?:\s+.*\n)*?\s+failureThreshold: (\d+)\n\s+periodSeconds: (\d+)",
            template.read_text(),
        )
        assert probes, template
        assert {int(f) * int(p) for f, p in probes} == {KUBELET_PLUGIN_STARTUP_SECONDS}, template
