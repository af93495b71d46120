"""`gpuplatform convert`: device-plugin GPU workloads rewritten into ResourceClaimTemplates and
pod resourceClaims, aimed at a tier of a stack's platform or at a DeviceClass."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gpuplatform.commands.selection import load_platforms
from gpuplatform.convert.files import ConvertResult, convert_files
from gpuplatform.convert.targets import resolve_targets
from gpuplatform.errors import InputError

__all__ = ["convert_command"]


def convert_command(
    files: Sequence[str],
    tier: str,
    spec: str | None = None,
    platform: str | None = None,
    maps: Sequence[str] = (),
    *,
    share: bool = False,
    out: str | None = None,
    kubernetes: str = "1.36",
) -> ConvertResult:
    """`files` converted to `tier` (of the one platform of the stack `spec`, or a DeviceClass),
    other `nvidia.com/` resources as `maps` say, into `out` (None: the result's lines)."""
    chosen = None
    if spec is not None:
        chosen = load_platforms(spec, (), platform, one=True)[0].platform
    elif platform is not None:
        raise InputError.single("--platform", "", "--platform needs --spec")
    return convert_files(
        [Path(f) for f in files],
        resolve_targets(tier, chosen, maps),
        Path(out) if out else None,
        share=share,
        kubernetes=kubernetes,
    )
