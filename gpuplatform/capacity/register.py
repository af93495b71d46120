"""Demand read from a cluster snapshot's migration register (`gpuplatform inventory register`).

A register row of a spec workload (same namespace, kind and name) gives that workload its real pod
count, node selector and tolerations; a row the spec does not name is a device-plugin workload that
stays legacy in every wave. Rows of pods that use claims are counted through the devices their
claims hold (`capacity.held`), not here; a tenant's claim template counts at least the claims made
from it that the snapshot holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gpuplatform.capacity.demand import Demand
from gpuplatform.evidence.register import WorkloadRow, spec_workloads
from gpuplatform.labels import GPU_RESOURCE
from gpuplatform.model.platform import Platform
from gpuplatform.model.tenants import Tenant
from gpuplatform.model.workloads import Toleration

__all__ = ["RegisterDemand", "register_demand"]


@dataclass(frozen=True)
class RegisterDemand:
    """The spec updated from the register, the extra legacy demand, and the rows not counted
    (workloads that request only other nvidia.com resources, such as MIG devices)."""

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


def register_demand(
    platform: Platform, rows: list[WorkloadRow], templates: Mapping[tuple[str, str], int] | None = None
) -> RegisterDemand:
    """Merge the snapshot's GPU workloads, and the claims made from each tenant template
    ((namespace, template) -> count), into the spec's demand."""
    index: dict[tuple[str, str, str], int] = {
        (w.namespace, str(w.kind), w.name): i for i, w in enumerate(platform.workloads)
    }
    workloads = list(platform.workloads)
    declared = spec_workloads(platform)
    extra: list[Demand] = []
    skipped: list[str] = []
    for row in rows:
        name = f"{row.kind} {row.namespace}/{row.name}"
        tolerations = tuple(_toleration(t) for t in row.tolerations)
        found = index.get((row.namespace, row.kind, row.name))
        if found is None and (row.namespace, row.kind, row.name) in declared:
            continue  # a NIM service, which the spec's demand holds wave by wave (`demand.py`)
        if found is not None:
            workloads[found] = workloads[found].model_copy(
                update={
                    "replicas": row.pods,
                    "node_selector": dict(row.node_selector),
                    "tolerations": tolerations,
                }
            )
        elif row.claims:
            continue
        elif not row.gpus:
            skipped.append(name)
        else:
            extra.append(
                Demand(
                    f"snapshot workload {name}",
                    "register",
                    row.pods,
                    row.gpus,
                    GPU_RESOURCE,
                    node_selector=dict(row.node_selector),
                    tolerations=tuple({k: v for k, v in t.model_dump().items() if v} for t in tolerations),
                )
            )
    tenants = tuple(_with_found_claims(t, templates or {}) for t in platform.tenants)
    merged = platform.model_copy(update={"workloads": tuple(workloads), "tenants": tenants})
    return RegisterDemand(merged, tuple(extra), tuple(skipped))


def _with_found_claims(tenant: Tenant, found: Mapping[tuple[str, str], int]) -> Tenant:
    templates = tuple(
        t.model_copy(update={"claims": max(t.claims, found.get((tenant.ns, t.name), 0))})
        for t in tenant.claim_templates
    )
    return tenant.model_copy(update={"claim_templates": templates})
