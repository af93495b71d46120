"""The peer of `check`: every selector evaluated device by device with cel-python's own evaluator.

cel-python parses and evaluates CEL independently of gpuplatform's engine; the Kubernetes
library functions selectors use (quantity, semver, lowerAscii, compareTo, ...) are supplied as
plain functions over gpuplatform's Quantity/Semver values. Expressions cel-python cannot run
(`cel.bind`, which it parses but cannot evaluate) are left out of the peer's work, which only
makes the peer look faster.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import celpy
from celpy import celtypes

from gpuplatform.cel import Quantity, Semver, parse_quantity, parse_semver
from gpuplatform.cel.device import split_name

_ENV = celpy.Environment()


def _compare(a: Any, b: Any) -> celtypes.IntType:
    return celtypes.IntType((a > b) - (a < b))


FUNCTIONS = {
    "quantity": lambda s: parse_quantity(str(s)),
    "semver": lambda s, *_: parse_semver(str(s)),
    "compareTo": _compare,
    "isGreaterThan": lambda a, b: celtypes.BoolType(a > b),
    "isLessThan": lambda a, b: celtypes.BoolType(a < b),
    "major": lambda v: celtypes.IntType(v.major),
    "lowerAscii": lambda s: celtypes.StringType(s.lower()),
}


def _value(value: dict[str, Any]) -> Any:
    ((kind, raw),) = value.items()
    if kind == "version":
        return parse_semver(str(raw))
    if kind == "string":
        return celtypes.StringType(raw)
    if kind == "bool":
        return celtypes.BoolType(raw)
    return celtypes.IntType(raw)


def device_activation(driver: str, device: dict[str, Any]) -> dict[str, Any]:
    """The `device` variable for cel-python."""
    attributes: dict[str, dict[str, Any]] = {}
    for name, value in (device.get("attributes") or {}).items():
        domain, ident = split_name(name, driver)
        attributes.setdefault(domain, {})[celtypes.StringType(ident)] = _value(value)
    capacity: dict[str, dict[str, Quantity]] = {}
    for name, value in (device.get("capacity") or {}).items():
        domain, ident = split_name(name, driver)
        capacity.setdefault(domain, {})[celtypes.StringType(ident)] = parse_quantity(str(value["value"]))
    return {
        "device": celtypes.MapType(
            {
                celtypes.StringType("driver"): celtypes.StringType(driver),
                celtypes.StringType("attributes"): celtypes.MapType(
                    {celtypes.StringType(k): celtypes.MapType(v) for k, v in attributes.items()}
                ),
                celtypes.StringType("capacity"): celtypes.MapType(
                    {celtypes.StringType(k): celtypes.MapType(v) for k, v in capacity.items()}
                ),
            }
        )
    }


def compile_chains(chains: Sequence[Sequence[str]]) -> tuple[list[list[Any]], list[Sequence[str]]]:
    """cel-python programs per chain, and the chains kept (those it can compile)."""
    programs: dict[str, Any] = {}
    out, kept = [], []
    for chain in chains:
        if any("cel.bind(" in e for e in chain):
            continue
        try:
            for expression in chain:
                if expression not in programs:
                    programs[expression] = _ENV.program(_ENV.compile(expression), functions=FUNCTIONS)
        except Exception:
            continue
        out.append([programs[e] for e in chain])
        kept.append(chain)
    return out, kept


def evaluate(chains: list[list[Any]], activation: dict[str, Any]) -> list[bool | None]:
    """Per chain: whether the device passes every selector (None when one raises)."""
    verdicts: list[bool | None] = []
    for chain in chains:
        verdict: bool | None = True
        for program in chain:
            try:
                result = program.evaluate(activation)
            except Exception:
                verdict = None
                break
            if not isinstance(result, celtypes.BoolType) or not result:
                verdict = None if not isinstance(result, celtypes.BoolType) else False
                break
        verdicts.append(verdict)
    return verdicts


def timed_sample(
    chains: list[list[Any]], driver: str, devices: Sequence[dict[str, Any]]
) -> tuple[float, list[list[bool | None]]]:
    """Seconds to convert and evaluate every chain on each device, and the verdicts."""
    start = time.perf_counter()
    verdicts = [evaluate(chains, device_activation(driver, d)) for d in devices]
    return time.perf_counter() - start, verdicts


__all__ = ["Semver", "compile_chains", "device_activation", "evaluate", "timed_sample"]
