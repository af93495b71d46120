"""Selector checks: compile every selector where the spec wrote it, count the devices it matches.

Errors: a selector that does not compile (GP310) or matches no device (GP311); a claim template no
single node can satisfy (GP312); an attribute the target driver release does not publish (GP313);
an attribute read that raises on some devices (GP314, with the `in` guard to add).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from gpuplatform.cel import CelCompileError, CelEvaluationError, DeviceSelector
from gpuplatform.errors import InputError, Problem
from gpuplatform.inventory.catalog import published_attributes
from gpuplatform.inventory.resource_slices import Pool
from gpuplatform.load.stacks import LoadedPlatform
from gpuplatform.model.platform import Platform
from gpuplatform.policy.targets import SelectorTarget, selector_targets
from gpuplatform.versions import parse_release

__all__ = ["CEL_GATES", "SelectorRow", "check_target", "compile_problems", "refuse_uncompilable"]

#: Kubernetes gates that change the DRA CEL environment.
CEL_GATES = ("DRAConsumableCapacity", "DRAListTypeAttributes")
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


def _features(platform: Platform) -> dict[str, bool]:
    return {g: v for g, v in platform.kubernetes.feature_gates.items() if g in CEL_GATES}


def _compile(
    platform: Platform, target: SelectorTarget, file: str, problems: list[Problem]
) -> list[tuple[str, DeviceSelector]]:
    minor = parse_release(platform.kubernetes.version).minor
    compiled = []
    for loc, expression in target.expressions:
        try:
            compiled.append((loc, DeviceSelector(expression, kubernetes=minor, features=_features(platform))))
        except CelCompileError as exc:
            problems.append(
                Problem(
                    file, loc, "GP310", f"{target.kind} {target.name!r}: selector does not compile: {exc}"
                )
            )
    return compiled


def compile_problems(platform: Platform, file: str) -> list[Problem]:
    """GP310 for every selector of the platform that cannot be built or does not compile.

    What `synth` refuses before it renders (the API server would reject the object); each distinct
    selector is compiled once, at the spec path that wrote it.
    """
    problems: list[Problem] = []
    seen: set[tuple[str, str]] = set()
    for target in selector_targets(platform):
        problems += [
            Problem(file, loc, "GP310", f"{target.kind} {target.name!r}: selector cannot be built: {why}")
            for loc, why in target.refused
        ]
        fresh = tuple(e for e in target.expressions if e not in seen)
        seen.update(fresh)
        _compile(platform, replace(target, expressions=fresh), file, problems)
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


def _match(
    compiled: Sequence[tuple[str, DeviceSelector]], pool: Pool, errors: dict[str, set[str]]
) -> list[dict[str, Any]]:
    """Devices matching every selector in order; a selector sees only the devices earlier ones kept."""
    devices = pool.devices
    for loc, selector in compiled:
        try:
            verdicts = selector.match_many(pool.driver, devices)
        except CelEvaluationError:
            verdicts = []
            for device in devices:
                try:
                    verdicts.append(selector.matches(pool.driver, device))
                except CelEvaluationError as exc:
                    errors.setdefault(loc, set()).add(str(exc).split("CEL runtime error: ", 1)[-1])
                    verdicts.append(False)
        devices = [d for d, ok in zip(devices, verdicts, strict=True) if ok]
    return devices


def _guard_hint(message: str) -> str:
    if message.startswith("no such key: "):
        name = message.removeprefix("no such key: ")
        return f"guard the read: '{name}' in device.attributes['gpu.nvidia.com'] && ..."
    return ""


def check_target(
    platform: Platform,
    target: SelectorTarget,
    modelled: Mapping[str, list[Pool]],
    inventory: Sequence[Pool] | None,
    file: str,
) -> tuple[SelectorRow, list[Problem]]:
    """Count what `target` matches in the modelled pools and the inventory; report its problems."""
    problems = [
        Problem(file, loc, "GP310", f"{target.kind} {target.name!r}: selector cannot be built: {why}")
        for loc, why in target.refused
    ]
    compiled = _compile(platform, target, file, problems)
    row = SelectorRow(target)
    if len(compiled) != len(target.expressions):
        return row, problems
    problems += _unpublished(platform, target, compiled, file)
    errors: dict[str, set[str]] = {}
    for pool_name, pools in modelled.items():
        counts = [len(_match(compiled, p, errors)) for p in pools]
        row.per_pool[pool_name] = sum(counts)
        row.best_node = max([row.best_node, *counts])
    if inventory is not None:
        inventory_counts = [len(_match(compiled, p, errors)) for p in inventory]
        row.inventory = sum(inventory_counts)
        row.best_node = max([row.best_node, *inventory_counts])
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
    elif inventory is not None and row.inventory == 0:
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
