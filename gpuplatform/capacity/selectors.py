"""Selector verdicts for the allocator: compiled once per expression, evaluated per slice in a batch.

The scheduler compiles selectors as stored expressions (k8s.io/dynamic-resource-allocation
cel.Cache) and evaluates them lazily per device; a runtime error aborts the allocation only when
the device is actually evaluated. Each slice is prepared once as a `DeviceSet` (widened when a
selector reads more) and a selector is evaluated once per distinct row; each device keeps its
own verdict or error, so errors still surface only where upstream would evaluate.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpuplatform.cel import CelCompileError, CelEvaluationError, DeviceSelector, DeviceSet

__all__ = ["SelectorCache"]

Verdict = bool | CelEvaluationError
_COMPILED: dict[tuple[str, str, tuple[tuple[str, bool], ...]], DeviceSelector | CelCompileError] = {}
"""Stored-expression selectors of the process: every run (and every platform) compiles one once."""


class SelectorCache:
    """Compiled selectors and per-slice verdicts, shared by every allocation of a run."""

    def __init__(self, kubernetes: str = "1.36", features: Mapping[str, bool] | None = None) -> None:
        self.kubernetes = kubernetes
        self.features = dict(features or {})
        self._compiled: dict[str, DeviceSelector | CelCompileError] = {}
        self._verdicts: dict[tuple[str, int], list[Verdict]] = {}
        self._keep: dict[int, Mapping[str, Any]] = {}
        self._tables: dict[int, tuple[DeviceSet, list[int]]] = {}

    def compile(self, expression: str) -> DeviceSelector:
        """The stored-expression selector; CelCompileError when it does not compile."""
        found = self._compiled.get(expression)
        if found is None:
            key = (expression, self.kubernetes, tuple(sorted(self.features.items())))
            found = _COMPILED.get(key)
            if found is None:
                try:
                    found = DeviceSelector(
                        expression, kubernetes=self.kubernetes, new_expression=False, features=self.features
                    )
                except CelCompileError as exc:
                    found = exc
                _COMPILED[key] = found
            self._compiled[expression] = found
        if isinstance(found, CelCompileError):
            raise found
        return found

    def verdicts(self, expression: str, spec: Mapping[str, Any]) -> list[Verdict]:
        """One verdict per device of a slice `spec` (true, false, or the runtime error)."""
        key = (expression, id(spec))
        found = self._verdicts.get(key)
        if found is not None:
            return found
        selector = self.compile(expression)
        self._keep[id(spec)] = spec
        table, rows = self._tables.get(id(spec), (None, []))
        if table is None or not selector.reads <= table.position.keys():
            reads = selector.reads | (table.position.keys() if table is not None else set())
            table = DeviceSet(str(spec["driver"]), reads)
            rows = table.add(None, spec.get("devices") or [])
            self._tables[id(spec)] = (table, rows)
        outcomes = selector.row_verdicts(table)
        out = [outcomes[row] for row in rows]
        self._verdicts[key] = out
        return out
