"""Demand read from a cluster snapshot's migration register (`gpuplatform inventory register`).

A register row of a spec workload (same namespace, kind and name) gives that workload its real pod
count, node selector and tolerations; a row the spec does not name is a device-plugin workload that
stays legacy in every wave. Rows of pods that already use claims are not counted: the modelled
fleet has no record of which devices they hold.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplatform.capacity.demand import Demand
from gpuplatform.evidence.register import WorkloadRow
from gpuplatform.model.platform import Platform
from gpuplatform.model.workloads import Toleration

__all__ = ["RegisterDemand", "register_demand"]


@dataclass(frozen=True)
class RegisterDemand:
    """The spec updated from the register, the extra legacy demand, and the rows not counted."""

    platform: Platform
    extra: tuple[Demand, ...]
    skipped: tuple[str, ...]


def _toleration(text: str) -> Toleration:
    """Read back the register's `key=value:effect` (`*` for an empty key or effect)."""
    head, _, effect = text.rpartition(":")
    key, _, value = head.partition("=")
    key = "" if key == "*" else key
    return Toleration(
        key=key,
        operator="Equal" if value else "Exists",
        value=value,
        effect="" if effect == "*" else effect,
    )


def register_demand(platform: Platform, rows: list[WorkloadRow]) -> RegisterDemand:
    """Merge the snapshot's GPU workloads into the spec's demand."""
    index: dict[tuple[str, str, str], int] = {
        (w.namespace, str(w.kind), w.name): i for i, w in enumerate(platform.workloads)
    }
    workloads = list(platform.workloads)
    extra: list[Demand] = []
    skipped: list[str] = []
    for row in rows:
        name = f"{row.kind} {row.namespace}/{row.name}"
        tolerations = tuple(_toleration(t) for t in row.tolerations)
        found = index.get((row.namespace, row.kind, row.name))
        if found is not None:
            workloads[found] = workloads[found].model_copy(
                update={
                    "replicas": row.pods,
                    "node_selector": dict(row.node_selector),
                    "tolerations": tolerations,
                }
            )
        elif row.claims or not row.gpus:
            skipped.append(name)
        else:
            extra.append(
                Demand(
                    f"snapshot workload {name}",
                    "register",
                    row.pods,
                    row.gpus,
                    "nvidia.com/gpu",
                    node_selector=dict(row.node_selector),
                    tolerations=tuple({k: v for k, v in t.model_dump().items() if v} for t in tolerations),
                )
            )
    return RegisterDemand(
        platform.model_copy(update={"workloads": tuple(workloads)}), tuple(extra), tuple(skipped)
    )
