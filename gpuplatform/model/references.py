"""Cross-references inside a Platform: every name used is defined, every name defined once."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from gpuplatform.kueue.model import kueue_reference_errors, queue_errors
from gpuplatform.model.clouds import node_group_name_problem
from gpuplatform.model.nodes import NodePool
from gpuplatform.model.waves import STAGES, Wave
from gpuplatform.versions import FLUX_BOOTSTRAP_BRANCH

if TYPE_CHECKING:
    from gpuplatform.model.platform import Platform

__all__ = ["Loc", "flux_branch_errors", "known", "reference_errors", "stage_order_errors", "takeover_errors"]

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


def flux_branch_errors(p: Platform) -> list[tuple[Loc, str]]:
    """A Flux platform on another branch than bootstrap's that names no GitRepository of its own:
    bootstrap's GitRepository would go on following its branch and Flux would ignore the revision."""
    d = p.delivery
    if "flux" not in d.engines or d.flux_git_repository is not None or d.revision == FLUX_BOOTSTRAP_BRANCH:
        return []
    return [
        (
            ("spec", "delivery", "revision"),
            f"Flux would not follow {d.revision!r}: its Kustomizations read bootstrap's GitRepository, "
            f"which follows bootstrap's branch ({FLUX_BOOTSTRAP_BRANCH!r} by default); set spec.delivery.fluxGitRepository to give the "
            f"platform its own GitRepository on {d.revision!r}",
        )
    ]


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
    errors += takeover_errors(p)
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
        errors += kueue_reference_errors(
            p.kueue,
            (pool.name for pool in p.node_pools),
            tenants,
            p.domain,
            (b.extended_resource_name for b in p.bridges),
        )
    errors += queue_errors(
        p.kueue, {t.name: t.ns for t in p.tenants}, ((w.namespace, w.queue) for w in p.workloads)
    )
    return errors + stage_order_errors(p.waves) + flux_branch_errors(p)


def _takeover_pair(pool: NodePool, source: NodePool, waves: list[Wave]) -> str:
    """What is wrong with `pool` taking nodes from `source` ("" when nothing is)."""
    new, old = pool.provisioner, source.provisioner
    assert new is not None
    if source.takes_over_from is not None:
        return f"pool {source.name!r} is itself a new group: take nodes from the group it takes over from"
    if old is None or (old.kind, old.cloud) != (new.kind, new.cloud):
        kind = (
            "a static pool"
            if old is None
            else f"a {old.kind} pool" + (f" on {old.cloud}" if old.cloud else "")
        )
        return f"pool {source.name!r} is {kind}: a takeover creates a group of the same kind next to a provisioner's"
    if old.cloud is not None and (problem := node_group_name_problem(old.cloud, old.name)):
        return f"pool {source.name!r}: the runbook resizes its group: {problem}"
    if source.selector is not None:
        return (
            f"pool {source.name!r} is selected inside group {old.name!r}: resizing the group would take nodes "
            "from its other pools; move that pool node by node instead"
        )
    if (source.product, source.gpus_per_node) != (pool.product, pool.gpus_per_node):
        return f"pool {source.name!r} has other GPUs ({source.product} x{source.gpus_per_node}): a takeover copies its nodes"
    names = [w.name for w in waves]
    at = names.index(pool.migrates_in) if pool.migrates_in in names else None
    if at == 0:
        return "the new group cannot exist in the first wave: rolling back to it must be able to delete the group"
    final = next((i for i, w in enumerate(waves) if w.stage == "final-cutover"), None)
    moves = names.index(source.migrates_in) if source.migrates_in in names else final
    if at is not None and moves is not None and moves <= at:
        return f"pool {source.name!r} is no longer legacy in wave {pool.migrates_in!r}: take nodes from a legacy group"
    return ""


def takeover_errors(p: Platform) -> list[tuple[Loc, str]]:
    """Every `takesOverFrom` names a legacy provisioner pool of the same kind and GPUs that has the
    nodes to give (its `maxNodes` and Karpenter `limits.nodes` cover every takeover's `minNodes`)."""
    pools = {pool.name: pool for pool in p.node_pools}
    errors: list[tuple[Loc, str]] = []
    given: dict[str, int] = {}
    for i, pool in enumerate(p.node_pools):
        name = pool.takes_over_from
        if name is None or pool.provisioner is None:
            continue
        loc: Loc = ("spec", "nodePools", i, "takesOverFrom")
        source = pools.get(name)
        if source is None or source is pool:
            what = (
                "is this pool itself"
                if source is pool
                else f"is not defined in spec.nodePools {known(pools)}"
            )
            errors.append((loc, f"pool {name!r} {what}"))
            continue
        problem = _takeover_pair(pool, source, list(p.waves))
        if problem:
            errors.append((loc, problem))
            continue
        given[name] = given.get(name, 0) + pool.provisioner.min_nodes
        assert source.provisioner is not None
        bound = [source.provisioner.max_nodes, source.provisioner.limits.get("nodes")]
        for limit in (b for b in bound if isinstance(b, int)):
            if given[name] > limit:
                errors.append(
                    (
                        loc,
                        f"pool {name!r} has at most {limit} node(s) and its takeovers take {given[name]}: "
                        "lower this pool's minNodes or raise that pool's maxNodes/limits",
                    )
                )
    return errors
