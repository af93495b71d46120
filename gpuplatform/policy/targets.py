"""What a platform asks the scheduler to find: the selectors of its tiers, bridges and claim templates."""

from __future__ import annotations

from dataclasses import dataclass

from gpuplatform.model.platform import Platform
from gpuplatform.render.nim_selectors import NIM_DRIVER, nim_expressions
from gpuplatform.render.selectors import full_gpu_expression, tier_expression

__all__ = ["SelectorTarget", "selector_targets"]


@dataclass(frozen=True)
class SelectorTarget:
    """Selectors evaluated together (class selectors first, then request selectors), at a spec path."""

    kind: str
    name: str
    loc: str
    expressions: tuple[tuple[str, str], ...]
    """(spec path of the expression, CEL) in evaluation order."""
    device_type: str
    count: int = 1
    refused: tuple[tuple[str, str], ...] = ()
    """(spec path, why) of selectors that cannot even be built (NIM selectors with a bad operator)."""


def selector_targets(platform: Platform) -> list[SelectorTarget]:
    """Every tier, platform bridge class, claim template and NIM service of the platform."""
    targets: list[SelectorTarget] = []
    tiers = {t.name: (i, t) for i, t in enumerate(platform.tiers)}
    for i, tier in enumerate(platform.tiers):
        loc = f"spec.tiers[{i}]"
        where = f"{loc}.cel" if tier.cel is not None else loc
        targets.append(
            SelectorTarget("tier", tier.name, loc, ((where, tier_expression(tier)),), tier.device_type)
        )
    for i, bridge in enumerate(platform.bridges):
        if bridge.source == "chart":
            continue
        loc = f"spec.bridges[{i}]"
        if bridge.tier is not None:
            _, tier = tiers[bridge.tier]
            expression, device_type = tier_expression(tier), tier.device_type
        else:
            expression, device_type = full_gpu_expression(), "gpu"
        targets.append(SelectorTarget("bridge", bridge.name, loc, ((loc, expression),), device_type))
    for i, tenant in enumerate(platform.tenants):
        for j, template in enumerate(tenant.claim_templates):
            loc = f"spec.tenants[{i}].claimTemplates[{j}]"
            k, tier = tiers[template.tier]
            tier_loc = f"spec.tiers[{k}].cel" if tier.cel is not None else f"spec.tiers[{k}]"
            extra = [(f"{loc}.selectors[{n}]", s) for n, s in enumerate(template.selectors)]
            expressions = ((tier_loc, tier_expression(tier)), *extra)
            targets.append(
                SelectorTarget(
                    "claimTemplate",
                    f"{tenant.ns}/{template.name}",
                    loc,
                    expressions,
                    tier.device_type,
                    template.count,
                )
            )
    for i, nim in enumerate(platform.nim_services):
        loc = f"spec.nimServices[{i}]"
        if nim.tier is not None:
            k, tier = tiers[nim.tier]
            tier_loc = f"spec.tiers[{k}].cel" if tier.cel is not None else f"spec.tiers[{k}]"
            base, device_type = (tier_loc, tier_expression(tier)), tier.device_type
        else:
            base, device_type = (loc, full_gpu_expression(NIM_DRIVER)), "gpu"
        requests, refused = nim_expressions(nim, loc)
        targets.append(
            SelectorTarget(
                "nimService",
                f"{nim.namespace}/{nim.name}",
                loc,
                (base, *requests),
                device_type,
                nim.count,
                tuple(refused),
            )
        )
    return targets
