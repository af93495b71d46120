"""Tenants and tiers: no escapes through tiers a tenant may not use, raw CEL, sharing or previews."""

from __future__ import annotations

import re
from collections.abc import Iterator

from gpuplatform.policy.registry import Finding, RuleContext, rule

__all__ = ["pins_one_sku"]

_REGEX_META = re.compile(r"[.*+?()\[\]{}|\\]")
_CEL_PRODUCT_EQUALS = re.compile(r"""productName\s*==\s*["']""")


def pins_one_sku(product_name: str | None, cel: str | None) -> bool:
    """A productName regex that is one literal name, or raw CEL comparing productName for equality."""
    if product_name is not None:
        return not _REGEX_META.search(product_name.strip("^$"))
    return cel is not None and bool(_CEL_PRODUCT_EQUALS.search(cel))


@rule(
    "GP150",
    "error",
    "a claim template uses a tier its tenant is not allowed",
    """
A tenant's admission policy and quota cover only the tiers listed in `tenants[].tiers`; a claim
template for another tier is rejected at admission, or, if the policy is relaxed, escapes quota.
""",
)
def template_tier_not_allowed(ctx: RuleContext) -> Iterator[Finding]:
    for i, tenant in enumerate(ctx.platform.tenants):
        for j, template in enumerate(tenant.claim_templates):
            if template.tier not in tenant.tiers:
                yield Finding(
                    f"spec.tenants[{i}].claimTemplates[{j}].tier",
                    f"claim template {template.name!r} uses tier {template.tier!r}, "
                    f"which tenant {tenant.name!r} may not use",
                    f"add {template.tier!r} to spec.tenants[{i}].tiers or pick an allowed tier",
                )


@rule(
    "GP151",
    "error",
    "a raw CEL tier owned by a tenant",
    """
A DeviceClass selector is cluster-wide and evaluated on every device of every pool. Raw CEL
written for one tenant is not reviewed like the typed predicates, can match devices of other
pools or raise at scheduling time; tenant-specific tiers must use typed predicates.
""",
)
def tenant_raw_cel(ctx: RuleContext) -> Iterator[Finding]:
    for i, tier in enumerate(ctx.platform.tiers):
        if tier.owner is not None and tier.cel is not None:
            yield Finding(
                f"spec.tiers[{i}].cel",
                f"tier {tier.name!r} of tenant {tier.owner!r} is raw CEL",
                "express it with typed predicates (architecture, minMemory, productName...)",
            )


@rule(
    "GP152",
    "error",
    "a production tenant on a sharing tier",
    """
Time-slicing and MPS share a GPU between claims without memory or fault isolation; a production
tenant gets exclusive tiers only.
""",
)
def production_sharing(ctx: RuleContext) -> Iterator[Finding]:
    tiers = {t.name: t for t in ctx.platform.tiers}
    for i, tenant in enumerate(ctx.platform.tenants):
        if tenant.environment != "production":
            continue
        for j, name in enumerate(tenant.tiers):
            if tiers[name].sharing != "exclusive":
                yield Finding(
                    f"spec.tenants[{i}].tiers[{j}]",
                    f"production tenant {tenant.name!r} may use {tiers[name].sharing} tier {name!r}",
                    "give production tenants exclusive tiers only",
                )


@rule(
    "GP160",
    "error",
    "NIM DRA (Technology Preview) in production",
    """
The NIM Operator's `draResources` is a Technology Preview. A NIM service in a production tenant's
namespace or moving in a production wave is refused unless accepted (`nimServices[].acceptPreview`
or `spec.accept.nimPreview`).
""",
)
def nim_preview_in_production(ctx: RuleContext) -> Iterator[Finding]:
    p = ctx.platform
    if p.accept.nim_preview:
        return
    production_ns = {t.ns for t in p.tenants if t.environment == "production"}
    waves = {w.name: w for w in p.waves}
    for i, nim in enumerate(p.nim_services):
        if nim.accept_preview:
            continue
        if nim.namespace in production_ns or waves[nim.moves_in].production:
            yield Finding(
                f"spec.nimServices[{i}]",
                f"NIM service {nim.namespace}/{nim.name} uses NIM DRA (Technology Preview) in production",
                "set acceptPreview: true on the service (or spec.accept.nimPreview) once the risk is accepted",
            )


@rule(
    "GP220",
    "warning",
    "a tier pins one exact product SKU",
    """
A tier that names one product (`productName: NVIDIA H100 80GB HBM3`) breaks when the fleet gains
an equivalent SKU (H100 SXM vs NVL, a new memory size) and the scheduler finds nothing. Say the
intent instead: architecture, minimum memory, compute capability.
""",
)
def exact_sku(ctx: RuleContext) -> Iterator[Finding]:
    for i, tier in enumerate(ctx.platform.tiers):
        if pins_one_sku(tier.product_name, tier.cel):
            field = "productName" if tier.product_name is not None else "cel"
            yield Finding(
                f"spec.tiers[{i}].{field}",
                f"tier {tier.name!r} pins one product SKU",
                "select by architecture, minMemory or minComputeCapability instead",
            )
