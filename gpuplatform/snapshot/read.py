"""A snapshot folder, read: each kind's items when first asked for, checked and (for the gates)
projected as they are read, the pods' logs and the nvidia-smi rows (`take.py` writes the folder;
the layout is documented in docs/evidence.md)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuplatform.errors import InputError
from gpuplatform.load.json_list import read_list_items
from gpuplatform.load.yaml_input import MAX_DATA_BYTES, read_data, read_head, read_text
from gpuplatform.snapshot.manifest import read_manifest, unread_kinds
from gpuplatform.snapshot.shapes import check_items

__all__ = ["ADDON_KINDS", "KINDS", "LOG_LIMIT", "Snapshot", "load_snapshot", "snapshot_or_pods"]

#: kind -> (kubectl resource, namespaced). ReplicaSets and Jobs resolve pod owners to workloads.
KINDS: dict[str, tuple[str, bool]] = {
    "nodes": ("nodes", False),
    "pods": ("pods", True),
    "daemonsets": ("daemonsets.apps", True),
    "replicasets": ("replicasets.apps", True),
    "jobs": ("jobs.batch", True),
    "deviceclasses": ("deviceclasses.resource.k8s.io", False),
    "resourceslices": ("resourceslices.resource.k8s.io", False),
    "resourceclaims": ("resourceclaims.resource.k8s.io", True),
    "resourceclaimtemplates": ("resourceclaimtemplates.resource.k8s.io", True),
    "customresourcedefinitions": ("customresourcedefinitions.apiextensions.k8s.io", False),
    "deployments": ("deployments.apps", True),
    "configmaps": ("configmaps", True),
    "namespaces": ("namespaces", False),
    "clusterqueues": ("clusterqueues.kueue.x-k8s.io", False),
    "localqueues": ("localqueues.kueue.x-k8s.io", True),
    "resourceflavors": ("resourceflavors.kueue.x-k8s.io", False),
    "workloads": ("workloads.kueue.x-k8s.io", True),
}
#: Kinds of add-ons a cluster may not run (Kueue): when the API server has no such resource type, the
#: snapshot records them as read with no object (nothing of the kind exists), not as missing.
ADDON_KINDS = frozenset({"clusterqueues", "localqueues", "resourceflavors", "workloads"})
#: Bytes of a pod's log (or of an `nvidia-smi` run) a snapshot keeps: the last ones, stated in the
#: manifest as `logLimitBytes`; a log is read back whole (the validation pods print a few lines).
LOG_LIMIT = 1 << 20


@dataclass
class Snapshot:
    """A snapshot folder, read: items per kind (`None` when missing), nvidia-smi rows, pod logs.

    With `lazy`, a kind not in `kinds` is read from `<folder>/<kind>.json` when first asked for
    (`load_snapshot`): a command reads the kinds it uses, and a forked child can read some while its
    parent reads others. A file that is not `kubectl get -o json` output is refused then.
    """

    folder: Path
    kinds: dict[str, list[dict[str, Any]] | None] = field(default_factory=dict)
    nvidia_smi: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    logs: dict[str, str] = field(default_factory=dict)
    """`namespace/pod` -> the `kubectl logs` text."""
    lazy: bool = False
    manifest: dict[str, Any] | None = None
    """`manifest.json`, when the folder has one: the kinds it does not record as read are unknown."""

    kept: set[str] = field(default_factory=set)
    """Kinds read from the folder through a `keep` function: held only as it returned them."""

    def items(
        self, kind: str, keep: Callable[[list[Any]], list[Any]] | None = None
    ) -> list[dict[str, Any]] | None:
        """The items of `kind` (None when missing); when first read from the folder, each batch of
        items read passes through `keep` (evidence keeps the fields the gates read)."""
        if self.lazy and kind not in self.kinds and kind in KINDS:
            unread = self.manifest is not None and kind in unread_kinds(self.manifest, (kind,))
            self.kinds[kind] = None if unread else _read_kind(self.folder, kind, keep)
            if keep is not None:
                self.kept.add(kind)
        return self.kinds.get(kind)

    def every_kind(self) -> dict[str, list[dict[str, Any]] | None]:
        """Items of every kind a snapshot holds (None for a missing one)."""
        return {kind: self.items(kind) for kind in KINDS}

    def runtime_logs(self) -> dict[str, str]:
        """Pod logs, with each `--nvidia-smi` CSV row added as the `nvidia-smi -L` line it stands for."""
        out = dict(self.logs)
        for target, rows in self.nvidia_smi.items():
            lines = [
                f"GPU {i}: {row.get('name', '')} (UUID: {row.get('uuid', '')})" for i, row in enumerate(rows)
            ]
            out[target] = out.get(target, "") + "".join(f"{line}\n" for line in lines)
        return out


def _csv_rows(text: str) -> list[dict[str, str]]:
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    header = [h.strip() for h in lines[0].split(",")]
    return [dict(zip(header, (c.strip() for c in line.split(",")), strict=False)) for line in lines[1:]]


def _read_kind(
    folder: Path, kind: str, keep: Callable[[list[Any]], list[Any]] | None
) -> list[dict[str, Any]] | None:
    """The items of `<folder>/<kind>.json` through `keep` (None when there is no such file):
    streamed, or, from a file the streamed read does not vouch for, read whole as before."""
    path = folder / f"{kind}.json"
    if not os.path.lexists(path):
        return None
    checked = _Checked(kind, path, keep)
    streamed = read_list_items(path, checked)
    if streamed is not None:
        checked.raise_refusal()
        return streamed
    doc = read_data(path, follow_links=False)
    items = doc.get("items") if isinstance(doc, dict) else None
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise InputError.single(
            str(path), "items", "expected `kubectl get -o json` output (a List of objects)"
        )
    check_items(kind, items, str(path))
    return items if keep is None else keep(items)


class _Checked:
    """`keep` after the shape check of each streamed batch, its items numbered in the file. The
    first refusal is kept until the whole file has been read, so a file that is not JSON further
    on is refused as not JSON, as the whole read refuses it."""

    def __init__(self, kind: str, path: Path, keep: Callable[[list[Any]], list[Any]] | None) -> None:
        self.kind, self.path, self.keep = kind, path, keep
        self.read = 0
        self.refused: InputError | None = None

    def __call__(self, batch: list[Any]) -> list[Any]:
        if self.refused is None:
            try:
                check_items(self.kind, batch, str(self.path), start=self.read)
            except InputError as exc:
                self.refused = exc
        self.read += len(batch)
        return batch if self.keep is None else self.keep(batch)

    def raise_refusal(self) -> None:
        if self.refused is not None:
            raise self.refused


def load_snapshot(folder: Path) -> Snapshot:
    """A snapshot folder (or a folder of `kubectl get -o json` files named `<kind>.json`): its
    logs and nvidia-smi rows read, its kinds read when first asked for."""
    if not folder.is_dir():
        raise InputError.single(str(folder), "", "no such snapshot folder")
    snapshot = Snapshot(folder, lazy=True, manifest=read_manifest(folder))
    for path in _files(folder / "nvidia-smi", ".csv"):
        namespace, _, pod = path.stem.partition("_")
        snapshot.nvidia_smi[f"{namespace}/{pod}"] = _csv_rows(
            read_text(path, MAX_DATA_BYTES, follow_links=False)
        )
    for path in _files(folder / "logs", ".log"):
        namespace, _, pod = path.stem.partition("_")
        snapshot.logs[f"{namespace}/{pod}"] = read_head(path, LOG_LIMIT, follow_links=False)
    return snapshot


def _files(folder: Path, suffix: str) -> list[Path]:
    """The `*<suffix>` entries of a snapshot's sub-folder, sorted; a link is refused, never followed."""
    if os.path.islink(folder):
        raise InputError.single(
            str(folder), "", "is a symbolic link; gpuplatform does not follow links in a snapshot"
        )
    if not folder.is_dir():
        return []
    return sorted(folder / e.name for e in os.scandir(folder) if e.name.endswith(suffix))


def snapshot_or_pods(path: Path) -> Snapshot:
    """A snapshot folder, or a lone `kubectl get pods -A -o json` file as a snapshot of pods only."""
    if path.is_dir():
        return load_snapshot(path)
    doc = read_data(path)
    items = doc.get("items") if isinstance(doc, dict) else None
    if not isinstance(items, list):
        raise InputError.single(
            str(path), "items", "expected a snapshot folder or `kubectl get pods -A -o json` output"
        )
    check_items("pods", items, str(path))
    snapshot = Snapshot(path.parent, {k: None for k in KINDS})
    snapshot.kinds["pods"] = items
    return snapshot
