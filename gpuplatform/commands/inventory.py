"""`gpuplatform inventory`: the migration register and the GPU nodes of a snapshot, as tables."""

from __future__ import annotations

from pathlib import Path

from gpuplatform.evidence.register import node_rows, workload_rows
from gpuplatform.evidence.tables import render_rows
from gpuplatform.snapshot.read import snapshot_or_pods

__all__ = ["nodes_table", "register_table"]


def register_table(source: str, fmt: str) -> str:
    """One row per GPU workload of `source` (a snapshot folder or a pods.json), as `fmt`."""
    return render_rows([r.as_dict() for r in workload_rows(snapshot_or_pods(Path(source)))], fmt)


def nodes_table(source: str, fmt: str, dra_namespace: str) -> str:
    """One row per GPU node of `source`, the DRA driver's pods looked for in `dra_namespace`."""
    return render_rows([r.as_dict() for r in node_rows(snapshot_or_pods(Path(source)), dra_namespace)], fmt)
