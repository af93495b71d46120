"""Cross-references inside a Platform: every name used is defined, every name defined once."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from gpuplatform.model.kueue import kueue_reference_errors, queue_errors
from gpuplatform.model.platform import Platform
from gpuplatform.model.waves import STAGES, Wave

__all__ = ["Loc", "known", "reference_errors", "stage_order_errors"]

Loc = tuple[int | str, ...]


def known(names: Iterable[str]) -> str:
    """`(defined: a, b)` in spec order, or `(none is defined)`: the valid names beside an unknown one."""
    listed = list(dict.fromkeys(names))
    return f"(defined: {', '.join(listed)})" if listed else "(none is defined)"


def _duplicates(field: str, names: Iterable[str]) -> Iterator[tuple[Loc, str]]:
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if name in seen:
            yield ("spec", field, i, "name"), f"{name!r} is already defined at spec.{field}[{seen[name]}]"
        else:
            seen[name] = i


def stage_order_errors(waves: Iterable[Wave]) -> list[tuple[Loc, str]]:
    """Stages in canonical order: `baseline` first, `final-cutover` last, the others never going
    back (repeats allowed); a `drain` wave may stand between any two."""
    waves = list(waves)
    order = ", ".join(STAGES[:-2] + STAGES[-1:])
    errors: list[tuple[Loc, str]] = []
    last: tuple[int, Wave] | None = None
    for i, wave in enumerate(waves):
        loc: Loc = ("spec", "waves", i, "stage")
        if (i == 0) != (wave.stage == "baseline"):
            where = "the first wave must be" if i == 0 else "only the first wave is"
            errors.append((loc, f"{where} stage baseline (wave {wave.name!r} is {wave.stage})"))
        elif wave.stage == "final-cutover" and i != len(waves) - 1:
            errors.append((loc, f"final-cutover must be the last wave ({waves[-1].name!r} comes after it)"))
        elif wave.stage == "drain" and i == len(waves) - 1:
            errors.append((loc, "a drain wave stands between two waves, never last"))
        elif (
            wave.stage != "drain"
            and last is not None
            and STAGES.index(wave.stage) < STAGES.index(last[1].stage)
        ):
            errors.append(
                (
                    loc,
                    f"stage {wave.stage} comes after {last[1].stage} (wave {last[1].name!r}, spec.waves[{last[0]}]): "
                    f"stages run in the order {order}, drain between any two",
                )
            )
        if wave.stage != "drain":
            last = (i, wave)
    return errors


def reference_errors(p: Platform) -> list[tuple[Loc, str]]:
    """Every dangling or duplicate name, with the path of the field that holds it."""
    errors: list[tuple[Loc, str]] = []
    for field, items in (
        ("nodePools", p.node_pools),
        ("tiers", p.tiers),
        ("bridges", p.bridges),
        ("tenants", p.tenants),
        ("waves", p.waves),
        ("nimServices", p.nim_services),
    ):
        errors += _duplicates(field, (i.name for i in items))
    errors += _duplicates("tenants.namespace", (t.ns for t in p.tenants))

    waves = [w.name for w in p.waves]
    tiers = [t.name for t in p.tiers]
    tenants = {t.name: t for t in p.tenants}
    bridges = [b.name for b in p.bridges]
    namespaces = [t.ns for t in p.tenants]

    def need(loc: Loc, kind: str, name: str | None, known_names: Iterable[str]) -> None:
        if name is not None and name not in known_names:
            errors.append((loc, f"{kind} {name!r} is not defined in spec.{kind}s {known(known_names)}"))

    if p.active_wave not in waves:
        errors.append(
            (("spec", "activeWave"), f"wave {p.active_wave!r} is not defined in spec.waves {known(waves)}")
        )
    for i, pool in enumerate(p.node_pools):
        need(("spec", "nodePools", i, "migratesIn"), "wave", pool.migrates_in, waves)
    for i, bridge in enumerate(p.bridges):
        need(("spec", "bridges", i, "tier"), "tier", bridge.tier, tiers)
    for i, tier in enumerate(p.tiers):
        need(("spec", "tiers", i, "owner"), "tenant", tier.owner, tenants)
    for i, tenant in enumerate(p.tenants):
        for j, name in enumerate(tenant.tiers):
            need(("spec", "tenants", i, "tiers", j), "tier", name, tiers)
        for j, tmpl in enumerate(tenant.claim_templates):
            need(("spec", "tenants", i, "claimTemplates", j, "tier"), "tier", tmpl.tier, tiers)
    for i, wave in enumerate(p.waves):
        for field, names, defined, kind in (
            ("tiers", wave.tiers, tiers, "tier"),
            ("bridges", wave.bridges, bridges, "bridge"),
            ("tenants", wave.tenants, tenants, "tenant"),
        ):
            for j, name in enumerate(names):
                need(("spec", "waves", i, field, j), kind, name, defined)
    for i, workload in enumerate(p.workloads):
        need(("spec", "workloads", i, "movesIn"), "wave", workload.moves_in, waves)
        need(("spec", "workloads", i, "tier"), "tier", workload.tier, tiers)
    for i, nim in enumerate(p.nim_services):
        need(("spec", "nimServices", i, "movesIn"), "wave", nim.moves_in, waves)
        need(("spec", "nimServices", i, "tier"), "tier", nim.tier, tiers)
    for i, nim in enumerate(p.nim_services):
        if nim.namespace not in namespaces:
            errors.append(
                (
                    ("spec", "nimServices", i, "namespace"),
                    f"namespace {nim.namespace!r} is no tenant's namespace {known(namespaces)}",
                )
            )
    if p.validation is not None:
        owner = tenants.get(p.validation.tenant)
        if owner is None:
            errors.append(
                (
                    ("spec", "validation", "tenant"),
                    f"tenant {p.validation.tenant!r} is not defined in spec.tenants {known(tenants)}",
                )
            )
        elif p.validation.claim_template not in {t.name for t in owner.claim_templates}:
            errors.append(
                (
                    ("spec", "validation", "claimTemplate"),
                    f"tenant {owner.name!r} has no claim template {p.validation.claim_template!r} "
                    + known(t.name for t in owner.claim_templates),
                )
            )
    if p.kueue is not None:
        errors += kueue_reference_errors(p.kueue, (pool.name for pool in p.node_pools), tenants)
    errors += queue_errors(
        p.kueue, {t.name: t.ns for t in p.tenants}, ((w.namespace, w.queue) for w in p.workloads)
    )
    return errors + stage_order_errors(p.waves)
