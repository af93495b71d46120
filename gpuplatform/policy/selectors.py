"""Selector checks: compile every selector where the spec wrote it, count the devices it matches.

Errors: a selector that does not compile (GP310) or matches no device (GP311); a claim template no
single node can satisfy (GP312); an attribute the target driver release does not publish (GP313);
an attribute read that raises on some devices (GP314, with the `in` guard to add).

Every selector of the platform is compiled first (each distinct expression once); the modelled
fleet and the inventory are then prepared once as `DeviceSet`s holding exactly what those selectors
read, and each target is evaluated on distinct device rows, never device by device.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from gpuplatform.cel import CelCompileError, CelEvaluationError, DeviceSelector, DeviceSet
from gpuplatform.errors import InputError, Problem
from gpuplatform.inventory.catalog import published_attributes
from gpuplatform.load.stacks import LoadedPlatform
from gpuplatform.model.platform import Platform
from gpuplatform.policy.targets import SelectorTarget, selector_targets
from gpuplatform.versions import cluster_gates, parse_release

__all__ = [
    "ChainCache",
    "Compiled",
    "FleetDevices",
    "SelectorRow",
    "check_target",
    "compile_problems",
    "compile_targets",
    "refuse_uncompilable",
]

_MAX_DEVICES_PER_CLAIM = 32


@dataclass
class SelectorRow:
    """One target's device counts: per modelled pool, per node maximum, and in the inventory."""

    target: SelectorTarget
    per_pool: dict[str, int] = field(default_factory=dict)
    best_node: int = 0
    inventory: int | None = None

    @property
    def modelled(self) -> int:
        return sum(self.per_pool.values())


@dataclass
class FleetDevices:
    """Devices prepared once: one `DeviceSet` per driver; owners are (group, node) pairs.

    `groups` lists the groups in report order (modelled pool names, or the inventory's one group).
    """

    sets: list[DeviceSet]
    groups: list[str]
    _per_group: list[dict[str, Counter[int]]] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        for devices in self.sets:
            per_group: dict[str, Counter[int]] = {}
            for owner, signature in devices.owners.items():
                group = owner[0] if isinstance(owner, tuple) else str(owner)
                per_group.setdefault(group, Counter())[signature] += 1
            self._per_group.append(per_group)

    def count(self, alive: Sequence[Sequence[bool]]) -> tuple[dict[str, int], int]:
        """Devices with a live row, per group, and the most on one owner (node)."""
        totals = dict.fromkeys(self.groups, 0)
        best = 0
        for devices, per_group, live in zip(self.sets, self._per_group, alive, strict=True):
            per_signature = devices.signature_counts(live)
            for group, signatures in per_group.items():
                totals[group] += sum(per_signature[s] * n for s, n in signatures.items())
                best = max([best, *(per_signature[s] for s in signatures)])
        return totals, best


@dataclass
class Compiled:
    """A target's compiled selectors, in evaluation order (None when one did not compile)."""

    target: SelectorTarget
    selectors: list[tuple[str, DeviceSelector]] | None
    problems: list[Problem]


def _features(platform: Platform) -> dict[str, bool]:
    """The cluster's gates (`versions.cluster_gates`), as `simulate` compiles selectors with them."""
    return cluster_gates(platform.kubernetes.feature_gates, parse_release(platform.kubernetes.version).minor)


def compile_targets(platform: Platform, targets: Sequence[SelectorTarget], file: str) -> list[Compiled]:
    """Compile every target's selectors (each distinct expression once) and check what they read."""
    minor = parse_release(platform.kubernetes.version).minor
    features = _features(platform)
    cache: dict[str, DeviceSelector | CelCompileError] = {}
    out = []
    for target in targets:
        problems = [
            Problem(file, loc, "GP310", f"{target.kind} {target.name!r}: selector cannot be built: {why}")
            for loc, why in target.refused
        ]
        selectors = []
        for loc, expression in target.expressions:
            if expression not in cache:
                try:
                    cache[expression] = DeviceSelector(expression, kubernetes=minor, features=features)
                except CelCompileError as exc:
                    cache[expression] = exc
            compiled = cache[expression]
            if isinstance(compiled, CelCompileError):
                message = f"{target.kind} {target.name!r}: selector does not compile: {compiled}"
                problems.append(Problem(file, loc, "GP310", message))
            else:
                selectors.append((loc, compiled))
        complete = len(selectors) == len(target.expressions) and not target.refused
        if complete:
            problems += _unpublished(platform, target, selectors, file)
        out.append(Compiled(target, selectors if complete else None, problems))
    return out


def compile_problems(platform: Platform, file: str) -> list[Problem]:
    """GP310 for every selector of the platform that cannot be built or does not compile.

    What `synth` refuses before it renders (the API server would reject the object); each distinct
    selector is compiled once, at the spec path that wrote it.
    """
    problems: list[Problem] = []
    seen: set[str] = set()
    for compiled in compile_targets(platform, selector_targets(platform), file):
        for problem in compiled.problems:
            if problem.code == "GP310" and problem.loc not in seen:
                seen.add(problem.loc)
                problems.append(problem)
    return sorted(set(problems))


def refuse_uncompilable(loaded: Sequence[LoadedPlatform]) -> None:
    """InputError (GP310) when a selector of any platform does not compile (`synth`, `plan`)."""
    problems = [p for lp in loaded for p in compile_problems(lp.platform, lp.source)]
    if problems:
        raise InputError(problems)


def _unpublished(
    platform: Platform, target: SelectorTarget, compiled: Sequence[tuple[str, DeviceSelector]], file: str
) -> list[Problem]:
    release = platform.dra_driver.chart_version
    try:
        published = published_attributes(release, target.device_type)
    except InputError:
        return []  # an unknown release is reported by the modelling step (GP301)
    problems = []
    for loc, selector in compiled:
        for read in sorted(selector.reads, key=repr):
            if len(read) != 3 or read[0] != "attributes" or read[2] is None or read[1] is None:
                continue
            _, domain, name = read
            qualified = name if domain == "gpu.nvidia.com" else f"{domain}/{name}"
            if domain in ("gpu.nvidia.com", "resource.kubernetes.io") and qualified not in published:
                problems.append(
                    Problem(
                        file,
                        loc,
                        "GP313",
                        f"{target.kind} {target.name!r} reads attribute {qualified!r}, which DRA driver "
                        f"{release} does not publish for {target.device_type} devices",
                        hint=f"published: {', '.join(sorted(published))}",
                    )
                )
    return problems


def _runtime_message(error: CelEvaluationError) -> str:
    return str(error).split("CEL runtime error: ", 1)[-1]


@dataclass
class ChainCache:
    """Per device set, the rows a chain of selectors keeps, and the errors met on the way (cached)."""

    fleet: FleetDevices
    verdicts: dict[tuple[int, int], list[bool | CelEvaluationError]] = field(default_factory=dict)
    chains: dict[tuple[int, ...], tuple[list[list[bool]], list[set[str]]]] = field(default_factory=dict)

    def _verdicts(self, index: int, selector: DeviceSelector) -> list[bool | CelEvaluationError]:
        key = (index, id(selector))
        if key not in self.verdicts:
            self.verdicts[key] = selector.row_verdicts(self.fleet.sets[index])
        return self.verdicts[key]

    def run(self, selectors: Sequence[DeviceSelector]) -> tuple[list[list[bool]], list[set[str]]]:
        """Rows each selector keeps, a later one seeing only what earlier ones kept (like a claim)."""
        key = tuple(id(s) for s in selectors)
        if key not in self.chains:
            errors: list[set[str]] = [set() for _ in selectors]
            alive_per_set = []
            for index, devices in enumerate(self.fleet.sets):
                alive = [True] * len(devices.rows)
                for position, selector in enumerate(selectors):
                    outcomes = self._verdicts(index, selector)
                    for row, outcome in enumerate(outcomes):
                        if not alive[row] or outcome is True:
                            continue
                        alive[row] = False
                        if isinstance(outcome, CelEvaluationError):
                            errors[position].add(_runtime_message(outcome))
                alive_per_set.append(alive)
            self.chains[key] = (alive_per_set, errors)
        return self.chains[key]


def _guard_hint(message: str) -> str:
    if message.startswith("no such key: "):
        name = message.removeprefix("no such key: ")
        return f"guard the read: '{name}' in device.attributes['gpu.nvidia.com'] && ..."
    return ""


def check_target(
    compiled: Compiled,
    modelled: FleetDevices,
    inventory: FleetDevices | None,
    file: str,
    caches: dict[int, ChainCache] | None = None,
    published: Callable[[str], bool] = lambda pool: True,
) -> tuple[SelectorRow, list[Problem]]:
    """Count what a compiled target matches in the modelled fleet and the inventory; its problems.

    `caches` (one per check run) shares verdicts and chains between targets that reuse selectors.
    `published(pool)`: whether the inventory covers a node of that spec pool; a target whose
    matching pools publish nothing yet (a cluster that has not moved them to DRA) is not judged by
    the inventory's devices.
    """
    target, problems = compiled.target, list(compiled.problems)
    row = SelectorRow(target)
    if compiled.selectors is None:
        return row, problems
    caches = caches if caches is not None else {}
    errors: dict[str, set[str]] = {}
    selectors = [s for _, s in compiled.selectors]
    for fleet in (modelled, inventory):
        if fleet is None:
            continue
        chains = caches.setdefault(id(fleet), ChainCache(fleet))
        alive, found = chains.run(selectors)
        for (loc, _), messages in zip(compiled.selectors, found, strict=True):
            if messages:
                errors.setdefault(loc, set()).update(messages)
        totals, best = fleet.count(alive)
        row.best_node = max(row.best_node, best)
        if fleet is modelled:
            row.per_pool = totals
        else:
            row.inventory = sum(totals.values())
    for loc, messages in sorted(errors.items()):
        for message in sorted(messages):
            problems.append(
                Problem(
                    file,
                    loc,
                    "GP314",
                    f"{target.kind} {target.name!r}: selector raises on some devices ({message}); "
                    "the scheduler gives up on such claims instead of skipping the device",
                    hint=_guard_hint(message),
                )
            )
    if row.modelled == 0 and not row.inventory:
        where = "the modelled pools" + (" or the inventory" if inventory is not None else "")
        problems.append(
            Problem(file, target.loc, "GP311", f"{target.kind} {target.name!r} matches no device in {where}")
        )
    elif (
        inventory is not None
        and row.inventory == 0
        and any(published(p) for p, n in row.per_pool.items() if n)
    ):
        problems.append(
            Problem(
                file,
                target.loc,
                "GP311",
                f"{target.kind} {target.name!r} matches no device of the inventory "
                f"(it matches {row.modelled} modelled device(s))",
                hint="compare the selector with what the cluster publishes: `kubectl get resourceslices -o yaml`",
            )
        )
    elif target.count > min(row.best_node, _MAX_DEVICES_PER_CLAIM):
        problems.append(
            Problem(
                file,
                f"{target.loc}.count",
                "GP312",
                f"{target.kind} {target.name!r} asks for {target.count} devices, but no single node has more "
                f"than {row.best_node} matching (and a claim holds at most {_MAX_DEVICES_PER_CLAIM})",
            )
        )
    return row, problems
