"""`DeviceSelector`: compile a DRA device selector once, then match ResourceSlice devices (memoised)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from gpuplatform.cel.checker import Checked, check
from gpuplatform.cel.device import DeviceSet, device_variable
from gpuplatform.cel.environment import Environment, environment_for
from gpuplatform.cel.errors import CelCompileError, CelEvaluationError
from gpuplatform.cel.interpreter import evaluate
from gpuplatform.cel.runtime import EvalError, type_name
from gpuplatform.cel.syntax import Expr, parse

__all__ = ["MAX_COST", "MAX_LENGTH", "DeviceSelector"]

MAX_LENGTH = 10_240
MAX_COST = 1_000_000
_MEMO_LIMIT = 1 << 16


@lru_cache(maxsize=4096)
def _parse(expression: str) -> Expr:
    """Parse once per expression, whatever the environments it is checked in."""
    return parse(expression)


@lru_cache(maxsize=4096)
def _compile(expression: str, environment: Environment) -> tuple[Expr, Checked]:
    """Check once per (expression, environment); ASTs are never mutated, so they are shared."""
    ast = _parse(expression)
    return ast, check(ast, environment)


class DeviceSelector:
    """A selector compiled for one release, as the API server (new) or the scheduler (stored) does."""

    def __init__(
        self,
        expression: str,
        *,
        kubernetes: str = "1.36",
        new_expression: bool = True,
        features: Mapping[str, bool] | None = None,
    ) -> None:
        self.expression = expression
        size = len(expression.encode("utf-8"))
        if size > MAX_LENGTH:
            raise CelCompileError(
                f"expression too long: {size} bytes, may not be more than {MAX_LENGTH} bytes"
            )
        self.environment: Environment = environment_for(kubernetes, new_expression, features)
        self._ast, checked = _compile(expression, self.environment)
        allowed = {"bool", "any"} | ({"dyn"} if self.environment.list_attributes else set())
        if checked.output.name not in allowed:
            raise CelCompileError(f"must evaluate to bool or the unknown type, not {checked.output}")
        self.cost: int = checked.cost
        if new_expression and self.cost > MAX_COST:
            raise CelCompileError(
                f"too complex, exceeds cost limit: estimated cost {self.cost}, limit {MAX_COST}"
            )
        self.reads: frozenset[tuple[Any, ...]] = checked.reads
        self._key_reads = sorted(self.reads, key=repr)
        self._memo: dict[tuple[Any, ...], bool | CelEvaluationError] = {}

    def __repr__(self) -> str:
        return f"DeviceSelector({self.expression!r}, kubernetes={self.environment.release!r})"

    def matches(self, driver: str, device: Mapping[str, Any]) -> bool:
        """Evaluate against one ResourceSlice v1 device; CelEvaluationError on a runtime error."""
        try:
            variable = device_variable(driver, device, self.environment.list_attributes)
            result = evaluate(self._ast, {"device": variable}, MAX_COST)
        except EvalError as exc:
            raise CelEvaluationError(f"device {device.get('name', '?')}: CEL runtime error: {exc}") from None
        if not isinstance(result, bool):
            name = device.get("name", "?")
            raise CelEvaluationError(
                f"device {name}: CEL result of type {type_name(result)} could not be converted to bool"
            )
        return result

    def row_verdicts(self, devices: DeviceSet) -> list[bool | CelEvaluationError]:
        """One outcome per distinct row of `devices`: the verdict, or the error evaluation raises.

        Rows of devices the scheduler can read that agree on everything this selector reads share
        one evaluation (memoised across device sets of the same driver); a row of a device whose
        attributes cannot be read is evaluated on its own (the error names the attribute).
        """
        missing = self.reads - set(devices.position)
        if missing:
            raise ValueError(f"device set does not prepare {sorted(missing, key=repr)}")
        health = 1 if self.environment.list_attributes else 0
        positions = [devices.position[read] for read in self._key_reads]
        if len(self._memo) > _MEMO_LIMIT:
            self._memo.clear()
        outcomes: list[bool | CelEvaluationError] = []
        for row, device in zip(devices.rows, devices.representatives, strict=True):
            healthy = row[-1][health] is True
            key = (devices.driver, *(row[p] for p in positions))
            outcome = self._memo.get(key) if healthy else None
            if outcome is None:
                try:
                    outcome = self.matches(devices.driver, device)
                except CelEvaluationError as exc:
                    outcome = exc
                if healthy:
                    self._memo[key] = outcome
            outcomes.append(outcome)
        return outcomes

    def verdicts(self, driver: str, devices: Sequence[Mapping[str, Any]]) -> list[bool | CelEvaluationError]:
        """Per device, its verdict or the error evaluating it raises (each distinct row once)."""
        table = DeviceSet(driver, self.reads)
        rows = table.add(None, devices)
        outcomes = self.row_verdicts(table)
        return [outcomes[row] for row in rows]

    def match_many(self, driver: str, devices: Sequence[Mapping[str, Any]]) -> list[bool]:
        """One verdict per device, evaluating each distinct combination of the values read only once."""
        return self._raise_first(self.verdicts(driver, devices))

    def count_matches(self, driver: str, devices: Sequence[Mapping[str, Any]] | DeviceSet) -> int:
        """How many devices match (memoised like `match_many`); `devices` may be a prepared set."""
        if isinstance(devices, DeviceSet):
            table = devices
        else:
            table = DeviceSet(driver, self.reads)
            table.add(None, devices)
        outcomes = self._raise_first(self.row_verdicts(table))
        return sum(table.counts(outcomes).values())

    @staticmethod
    def _raise_first(outcomes: list[bool | CelEvaluationError]) -> list[bool]:
        verdicts = []
        for outcome in outcomes:
            if isinstance(outcome, CelEvaluationError):
                raise outcome
            verdicts.append(outcome)
        return verdicts
