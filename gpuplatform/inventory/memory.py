"""Device memory against the catalog: a figure and its known variance, as a byte range."""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpuplatform.cel.quantity import QuantityError, parse_quantity

__all__ = ["MemoryRange", "memory_range"]


@dataclass(frozen=True)
class MemoryRange:
    """The bytes a device may publish: `figure` ± `variance` (a fraction of it), bounds included."""

    figure: str
    variance: float
    low: int
    high: int

    def contains(self, published: str) -> bool:
        """Whether `published` (a quantity) lies within the range; unparsable text never does."""
        try:
            value = parse_quantity(published).value
        except QuantityError:
            return False
        return self.low <= value <= self.high

    def describe(self) -> str:
        return self.figure if not self.variance else f"{self.figure} (±{self.variance:.1%})"

    def as_data(self) -> dict[str, object]:
        return {"figure": self.figure, "low": self.low, "high": self.high, "describe": self.describe()}


def memory_range(figure: str, variance: float) -> MemoryRange:
    """The range of a catalog figure (`81559Mi`) with its known variance (`0.01`)."""
    value = parse_quantity(figure).value
    spread = value * variance
    return MemoryRange(figure, variance, math.floor(value - spread), math.ceil(value + spread))
