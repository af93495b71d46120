"""What runs in a wave and what each pod needs: device-plugin GPUs, or claims on DRA devices.

Demand comes from the spec: legacy workloads (`nvidia.com/gpu` until their `movesIn` wave, then a
claim of their tier per pod), NIM services (blue/green: the legacy service until `movesIn`, both
in that wave, only the DRA one afterwards), tenants' claim templates (`claims` pods each) and the
validation Job. Claim pods are taken to tolerate the DRA pools' taints, as the validation Job does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from gpuplatform.capacity.claims import Claim, ClaimRequest, Request
from gpuplatform.labels import GPU_RESOURCE
from gpuplatform.model.platform import Platform
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.nim_selectors import nim_expressions
from gpuplatform.render.nodes import pool_taint

__all__ = ["CHART_GPU_CLASS", "Demand", "claim_for", "claims_signature", "wave_demands"]

CHART_GPU_CLASS = "gpu.nvidia.com"


@dataclass(frozen=True)
class Demand:
    """Pods of one workload that run in a wave, all alike."""

    name: str
    loc: str
    pods: int
    per_pod: int
    resource: str = ""
    """Extended resource of device-plugin pods; empty for claim pods."""
    claims: tuple[Claim, ...] = ()
    shared: bool = False
    """The claims are allocated once and shared by every pod (`resourceClaimName`)."""
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Mapping[str, Any], ...] = ()

    @property
    def total(self) -> int:
        """Devices the demand holds when placed (a shared claim counts once)."""
        return self.per_pod if self.shared else self.per_pod * self.pods

    @property
    def on_dra(self) -> bool:
        return bool(self.claims)

    @cached_property
    def signature(self) -> str:
        """What the allocator reads of the claims (their names aside): the memo key of a placement."""
        return claims_signature(self.claims)

    @cached_property
    def placement_key(self) -> str:
        """What decides which nodes a pod may use: its node selector and tolerations."""
        return repr((sorted(self.node_selector.items()), self.tolerations))

    @cached_property
    def pod_key(self) -> str:
        """What decides whether one pod fits: pods alike fit or fail alike."""
        return repr((self.resource, self.per_pod)) + self.signature + self.placement_key

    @cached_property
    def key(self) -> str:
        """Everything placement reads of the demand, names included (a moment's memo key)."""
        return repr((self.name, self.loc, self.pods, self.shared)) + self.pod_key


def claims_signature(claims: tuple[Claim, ...]) -> str:
    """The claims' requests and constraints as one comparable string."""
    return repr([(c.requests, c.constraints) for c in claims])


def claim_for(
    name: str, namespace: str, class_name: str, count: int, selectors: tuple[str, ...] = ()
) -> Claim:
    """A one-request claim, as the tool's ResourceClaimTemplates render it."""
    request = Request("gpu", class_name, "ExactCount", count, None, selectors)
    return Claim(name, namespace, (ClaimRequest("gpu", request),))


def _dra_tolerations(platform: Platform) -> tuple[Mapping[str, Any], ...]:
    taints = {tuple(sorted(pool_taint(platform, p).items())) for p in platform.node_pools}
    return tuple({**dict(t), "operator": "Equal"} for t in sorted(taints))


def _toleration(t: Any) -> dict[str, str]:
    return {k: v for k, v in t.model_dump(by_alias=True).items() if v}


def wave_demands(plan: Plan, state: WaveState) -> list[Demand]:
    """Every demand of `state`, in spec order."""
    p = plan.platform
    dra = _dra_tolerations(p)
    out: list[Demand] = []
    for i, w in enumerate(p.workloads):
        name, loc = f"workload {w.namespace}/{w.name}", f"spec.workloads[{i}]"
        own = tuple(_toleration(t) for t in w.tolerations)
        if i in state.workloads:  # the converted manifest keeps its placement, with the DRA taints tolerated
            claim = claim_for(f"{w.name}-gpu", w.namespace, p.class_name(w.tier), w.gpus)
            tolerations = own + tuple(t for t in dra if t not in own)
            out.append(
                Demand(name, loc, w.replicas, w.gpus, "", (claim,), False, w.node_selector, tolerations)
            )
        else:
            out.append(Demand(name, loc, w.replicas, w.gpus, w.resource, (), False, w.node_selector, own))
    for i, nim in enumerate(p.nim_services):
        name, loc = f"NIM service {nim.namespace}/{nim.name}", f"spec.nimServices[{i}]"
        moved = nim.name in state.nim_services
        moving = moved and nim.moves_in == state.name
        if nim.replaces and (not moved or moving):
            legacy = f"NIM service {nim.namespace}/{nim.replaces}"
            out.append(Demand(legacy, loc, nim.replicas, nim.count, GPU_RESOURCE))
        if moved:
            expressions, _ = nim_expressions(nim, loc)
            class_name = p.class_name(nim.tier) if nim.tier else CHART_GPU_CLASS
            selectors = tuple(e for _, e in expressions) if nim.mode == "claimCreationSpec" else ()
            claim = claim_for(f"{nim.name}-gpu", nim.namespace, class_name, nim.count, selectors)
            shared = nim.mode == "claim"
            out.append(
                Demand(name, loc, nim.replicas, nim.count, claims=(claim,), shared=shared, tolerations=dra)
            )
    for t, tenant in enumerate(p.tenants):
        if tenant.name not in state.tenants:
            continue
        for j, template in enumerate(tenant.claim_templates):
            if not template.claims:
                continue
            claim = claim_for(
                template.name, tenant.ns, p.class_name(template.tier), template.count, template.selectors
            )
            name, loc = (
                f"claim template {tenant.ns}/{template.name}",
                f"spec.tenants[{t}].claimTemplates[{j}]",
            )
            out.append(Demand(name, loc, template.claims, template.count, claims=(claim,), tolerations=dra))
    validation = _validation_demand(plan, state, dra)
    if validation is not None:
        out.append(validation)
    return out


def _validation_demand(plan: Plan, state: WaveState, dra: tuple[Mapping[str, Any], ...]) -> Demand | None:
    """The validation Job's one pod with one claim of its tenant's template."""
    p, v = plan.platform, plan.platform.validation
    if not state.validation or v is None:
        return None
    owner = next((t for t in p.tenants if t.name == v.tenant and t.name in state.tenants), None)
    if owner is None:
        return None
    template = next((c for c in owner.claim_templates if c.name == v.claim_template), None)
    if template is None:
        return None
    claim = claim_for(v.name, owner.ns, p.class_name(template.tier), template.count, template.selectors)
    name = f"validation Job {owner.ns}/{v.name}"
    return Demand(name, "spec.validation", 1, template.count, claims=(claim,), tolerations=dra)
