"""Every gate, one module each: a module of this package that defines `GATE` is a gate, and
nothing else lists them. Job gates and evidence checks are each in the order of their ids."""

from __future__ import annotations

import importlib
import pkgutil

from gpuplatform.gates.gate import Gate

__all__ = ["ALL", "EVIDENCE_CHECKS", "GATES"]


def _found() -> list[Gate]:
    gates = []
    for module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        gate = getattr(importlib.import_module(f"{__name__}.{module.name}"), "GATE", None)
        if not isinstance(gate, Gate):
            raise TypeError(f"gpuplatform/gates/catalog/{module.name}.py defines no GATE of type Gate")
        gates.append(gate)
    return gates


#: Every gate, in the order of their ids.
ALL: tuple[Gate, ...] = tuple(sorted(_found(), key=lambda g: g.id))
#: The gates that run as Jobs of their waves.
GATES: tuple[Gate, ...] = tuple(g for g in ALL if g.job)
#: Evidence with no Job of its own: `gpuplatform evidence` checks these against a snapshot.
EVIDENCE_CHECKS: tuple[Gate, ...] = tuple(g for g in ALL if not g.job)
