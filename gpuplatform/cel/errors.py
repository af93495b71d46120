"""Errors raised by the DRA CEL engine: one base, one per phase."""

from __future__ import annotations

from gpuplatform.errors import GpuplatformError

__all__ = ["CelCompileError", "CelError", "CelEvaluationError"]


class CelError(GpuplatformError):
    """Base of every CEL failure."""


class CelCompileError(CelError):
    """The selector does not compile: syntax, undeclared name, type, length or cost."""


class CelEvaluationError(CelError):
    """Evaluating the selector against a device failed (the scheduler aborts allocation)."""
