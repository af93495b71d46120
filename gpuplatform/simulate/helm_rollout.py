"""helm-controller's bound on a DRA driver upgrade: the kubelet plugin's rollout within `spec.timeout`.

fluxcd/helm-controller v1.6.3: an upgrade waits for every object of the release to be ready
(`internal/action/upgrade.go`: `Wait`, `Timeout` from `spec.timeout`, default 5m), so a DaemonSet
rolling `maxUnavailable` nodes at a time must finish inside it or the upgrade fails. What follows a
failure is `internal/reconcile/atomic_release.go`: with `upgrade.strategy.name: RetryOnFailure` the
upgrade is retried after `retryInterval` without remediation (`GetActiveRetry`); otherwise the
remediation runs — `rollback` by default (api/v2 `UpgradeRemediation.GetStrategy`) between retries
and, unless `remediateLastFailure: false`, after the last (`MustRemediateLastFailure`: true when
`retries > 0`) — and an exhausted release stalls (`ErrExceededMaxRetries`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from gpuplatform.charts.rollout import KUBELET_PLUGIN_STARTUP_SECONDS
from gpuplatform.render.rollout import rollout_batches

__all__ = ["UpgradeOutcome", "driver_upgrade", "duration_minutes"]

#: Helm's wait when a HelmRelease sets no `spec.timeout` (api/v2 `Timeout`: "Defaults to '5m0s'").
DEFAULT_TIMEOUT_MINUTES = 5.0
_UNIT_MINUTES = {"ms": 1 / 60000, "s": 1 / 60, "m": 1.0, "h": 60.0}


@dataclass(frozen=True)
class UpgradeOutcome:
    """What helm-controller does with one upgrade: '' when it succeeded, else why it failed, and
    whether the release was rolled back to the previous version."""

    error: str = ""
    rolled_back: bool = False


def duration_minutes(text: str) -> float:
    """A Go duration as the CRD allows it (`25m`, `1h30m`, `90s`) in minutes."""
    parts = re.findall(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)", text)
    return sum(float(n) * _UNIT_MINUTES[u] for n, u in parts)


def driver_upgrade(spec: dict[str, Any], values: dict[str, Any], nodes: int) -> UpgradeOutcome:
    """An upgrade of the DRA driver release `spec` (a HelmRelease spec) whose kubelet plugin runs on
    `nodes` nodes and rolls out as `values` say (the chart's default: 100% at once)."""
    rolling = ((values.get("kubeletPlugin") or {}).get("updateStrategy") or {}).get("rollingUpdate") or {}
    batches = rollout_batches(nodes, rolling.get("maxUnavailable", "100%"))
    needed = math.ceil(batches * KUBELET_PLUGIN_STARTUP_SECONDS / 60)
    timeout = duration_minutes(str(spec["timeout"])) if "timeout" in spec else DEFAULT_TIMEOUT_MINUTES
    if needed <= timeout:
        return UpgradeOutcome()
    why = f"upgrade timed out after {timeout:g}m: the kubelet plugin's rollout on {nodes} node(s) may take {needed}m"
    upgrade = spec.get("upgrade") or {}
    if (upgrade.get("strategy") or {}).get("name") == "RetryOnFailure":
        return UpgradeOutcome(f"{why}; retried without remediation")
    remediation = upgrade.get("remediation") or {}
    retries = int(remediation.get("retries", 0))
    last = remediation.get("remediateLastFailure", retries > 0)
    if (retries != 0 or last) and remediation.get("strategy", "rollback") == "rollback":
        return UpgradeOutcome(f"{why}; remediated by rolling the driver back", rolled_back=True)
    return UpgradeOutcome(f"{why}; left failed for the operator (no rollback)")
