"""A platform's tree in memory: every file `synth` would write, validated, and nothing written."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gpuplatform.commands.synth import render_all
from gpuplatform.load.stacks import LoadedPlatform

__all__ = ["RenderReport", "render_platforms"]


@dataclass(frozen=True)
class RenderReport:
    """One platform's rendered files: relative path -> bytes, in output order."""

    platform: str
    files: dict[str, bytes]
    exit_code: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "platform": self.platform,
            "files": {path: data.decode() for path, data in self.files.items()},
        }

    def text(self) -> str:
        """The paths, one a line, under the platform's folder."""
        return "\n".join(f"{self.platform}/{path}" for path in self.files)


def render_platforms(loaded: Sequence[LoadedPlatform], overrides: Sequence[str] = ()) -> list[RenderReport]:
    """Every platform's files, rendered together (a stack's Argo CD platforms share ApplicationSets)."""
    return [RenderReport(name, files) for name, files in render_all(loaded, overrides).items()]
