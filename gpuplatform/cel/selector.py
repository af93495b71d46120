"""`DeviceSelector`: compile a DRA device selector once, then match ResourceSlice devices (memoised)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gpuplatform.cel.checker import check
from gpuplatform.cel.device import DeviceSet, device_variable
from gpuplatform.cel.environment import Environment, environment_for
from gpuplatform.cel.errors import CelCompileError, CelEvaluationError
from gpuplatform.cel.interpreter import evaluate
from gpuplatform.cel.runtime import EvalError, type_name
from gpuplatform.cel.syntax import parse

__all__ = ["MAX_COST", "MAX_LENGTH", "DeviceSelector"]

MAX_LENGTH = 10_240
MAX_COST = 1_000_000
_MEMO_LIMIT = 1 << 16


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
        self._ast = parse(expression)
        checked = check(self._ast, self.environment)
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

    def _keys(self, devices: DeviceSet) -> list[tuple[Any, ...]]:
        columns = [devices.column(read) for read in self._key_reads]
        if not self.environment.list_attributes:
            columns.append(devices.scalar_problems())
        if not columns:
            return [()] * len(devices)
        return list(zip(*columns, strict=True))

    def _verdicts(
        self, devices: DeviceSet, keys: list[tuple[Any, ...]], unique: Iterable[tuple[Any, ...]]
    ) -> dict[tuple[Any, ...], bool]:
        """Verdict per distinct key, evaluating one representative device for each memo miss."""
        if len(self._memo) > _MEMO_LIMIT:
            self._memo.clear()
        verdicts: dict[tuple[Any, ...], bool] = {}
        for key in unique:
            memo_key = (devices.driver, key)
            outcome = self._memo.get(memo_key)
            if outcome is None:
                try:
                    outcome = self.matches(devices.driver, devices.devices[keys.index(key)])
                except CelEvaluationError as exc:
                    outcome = exc
                self._memo[memo_key] = outcome
            if isinstance(outcome, CelEvaluationError):
                raise outcome
            verdicts[key] = outcome
        return verdicts

    def match_many(self, driver: str, devices: Sequence[Mapping[str, Any]] | DeviceSet) -> list[bool]:
        """One verdict per device, evaluating each distinct combination of the values read only once."""
        table = devices if isinstance(devices, DeviceSet) else DeviceSet(driver, devices)
        keys = self._keys(table)
        verdicts = self._verdicts(table, keys, dict.fromkeys(keys))
        return [verdicts[k] for k in keys]

    def count_matches(self, driver: str, devices: Sequence[Mapping[str, Any]] | DeviceSet) -> int:
        """How many devices match (memoised like `match_many`)."""
        table = devices if isinstance(devices, DeviceSet) else DeviceSet(driver, devices)
        keys = self._keys(table)
        counts = Counter(keys)
        verdicts = self._verdicts(table, keys, counts)
        return sum(n for key, n in counts.items() if verdicts[key])
