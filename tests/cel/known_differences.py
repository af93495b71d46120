"""The one list of conformance cases gpuplatform.cel does not reproduce, with the reason."""

from __future__ import annotations

KNOWN_DIFFERENCES: dict[str, str] = {}
