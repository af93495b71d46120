"""Facts about the Helm charts the platform installs, per chart version (see `facts.py`)."""

from __future__ import annotations

from gpuplatform.charts.facts import (
    CLUSTER_SCOPED_KINDS,
    MISSING,
    ChartFacts,
    ChartKind,
    Component,
    Match,
    all_chart_facts,
    chart_facts,
    leaf_paths,
    value_at,
)

__all__ = [
    "CLUSTER_SCOPED_KINDS",
    "MISSING",
    "ChartFacts",
    "ChartKind",
    "Component",
    "Match",
    "all_chart_facts",
    "chart_facts",
    "leaf_paths",
    "value_at",
]
