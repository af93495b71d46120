"""`gpuplatform snapshot`: read the cluster with kubectl into a snapshot folder."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuplatform.snapshot.take import DEFAULT_HELM_RELEASE, take_snapshot

__all__ = ["SnapshotReport", "snapshot_command"]


@dataclass(frozen=True)
class SnapshotReport:
    """What a snapshot read, per kind, pod and Helm release, from its manifest."""

    out: str
    manifest: dict[str, Any]

    @property
    def exit_code(self) -> int:
        """1 when the cluster was out of reach or a kind is missing."""
        return 1 if self.refusal() else 0

    def text(self) -> str:
        """One line per kind, nvidia-smi pod, log and Helm release, with its state (none when the
        cluster was out of reach)."""
        if self.manifest.get("unreachable"):
            return ""
        lines = [f"{kind}: {state}" for kind, state in self.manifest["kinds"].items()]
        lines += [f"nvidia-smi {target}: {state}" for target, state in self.manifest["nvidiaSmi"].items()]
        lines += [f"logs {target}: {state}" for target, state in self.manifest["logs"].items()]
        lines += [
            f"helm release {target}: {state}" for target, state in self.manifest["helmReleases"].items()
        ]
        return "\n".join(lines)

    def refusal(self) -> str:
        """Why the snapshot cannot be used (empty when it can)."""
        if self.manifest.get("unreachable"):
            where = f" (context {self.manifest['context']})" if self.manifest.get("context") else ""
            return f"{self.out}: cannot reach the cluster{where}: {self.manifest['unreachable']}"
        if self.manifest["missing"]:
            return f"{self.out}: incomplete snapshot, missing {', '.join(self.manifest['missing'])}"
        return ""


def snapshot_command(
    out: str,
    *,
    context: str | None = None,
    namespaces: Sequence[str] = (),
    nvidia_smi_pods: Sequence[str] = (),
    log_pods: Sequence[str] = (),
    helm_releases: Sequence[str] = (),
) -> SnapshotReport:
    """`take_snapshot` into `out` (`helm_releases` default: the GPU Operator's)."""
    manifest = take_snapshot(
        Path(out),
        context=context,
        namespaces=namespaces,
        nvidia_smi_pods=nvidia_smi_pods,
        log_pods=log_pods,
        helm_releases=helm_releases or (DEFAULT_HELM_RELEASE,),
    )
    return SnapshotReport(out, manifest)
