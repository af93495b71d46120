"""`simulate --write-snapshots DIR`: the model's cluster written at every checkpoint of a replay.

A checkpoint is a gate Job judged (before it acts on what it read) or the cluster settled (a wave
adopted, a transition done, a restart or a driver upgrade behind it). Each is written as the folder
`gpuplatform snapshot` would write of the same cluster, named so that the folders sort in replay
order and say the platform, the engine, the transition, the step and what happened:
`01.1.0007-lab-argocd-base-to-pilot-step00033-gate-operands-holds`. `gpuplatform evidence STACK
--wave <target> --snapshot DIR/<folder>` then judges what the model expects the cluster to be.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from gpuplatform.errors import InputError
from gpuplatform.simulate.snapshot import cluster_snapshot, write_snapshot
from gpuplatform.simulate.world import World
from gpuplatform.snapshot.manifest import TIME_FORMAT

__all__ = ["Checkpoints", "prepare_folder"]

_SLUG = re.compile(r"[^a-z0-9.]+")


def prepare_folder(folder: Path) -> None:
    """Create `folder` for the checkpoints; InputError when it holds anything already."""
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise InputError.single(str(folder), "", "--write-snapshots needs a new or empty folder")
    folder.mkdir(parents=True, exist_ok=True)


def _written() -> datetime:
    """Now, or `SOURCE_DATE_EPOCH` (the reproducible-builds convention) for byte-identical runs."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "")
    return datetime.fromtimestamp(int(epoch), UTC) if epoch.isdigit() else datetime.now(UTC)


@dataclass
class Checkpoints:
    """Writes one snapshot folder per checkpoint of one platform's replays under one engine."""

    folder: Path
    order: str
    """`<platform index>.<engine index>`: folders of earlier platforms and engines sort first."""
    count: int = 0
    written: str = field(default_factory=lambda: _written().strftime(TIME_FORMAT))
    """When the replay wrote its snapshots (the manifest's `time`, which `evidence` dates them by)."""

    def __call__(self, world: World, what: str) -> None:
        self.count += 1
        p = world.plan.platform
        slug = _SLUG.sub("-", what.lower()).strip("-")
        name = f"{self.order}.{self.count:04d}-{p.name}-{world.engine}-{world.transition}"
        name += f"-step{world.steps:05d}-{slug}"
        manifest = {
            "serverVersion": f"v{p.kubernetes.version}",
            "time": self.written,
            "checkpoint": {
                "platform": p.name,
                "engine": world.engine,
                "transition": world.transition,
                "wave": world.target,
                "step": world.steps,
                "what": what,
            },
        }
        write_snapshot(cluster_snapshot(world), self.folder / name, manifest)
