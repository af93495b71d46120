"""Read ResourceSlices from `kubectl get resourceslices -o json|yaml` output, normalised to v1 and grouped."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gpuplatform.errors import InputError, Problem
from gpuplatform.load.yaml_input import MAX_DATA_BYTES, read_text

__all__ = ["Pool", "normalise_slice", "parse_resource_slices", "read_resource_slices"]

_VERSIONS = ("resource.k8s.io/v1", "resource.k8s.io/v1beta1", "resource.k8s.io/v1beta2")


@dataclass
class Pool:
    """All slices of one (node, driver, pool) at its highest generation, and their devices."""

    node: str
    driver: str
    pool: str
    generation: int
    slices: list[dict[str, Any]] = field(default_factory=list)

    @property
    def devices(self) -> list[dict[str, Any]]:
        return [d for s in self.slices for d in s["spec"].get("devices") or []]


def normalise_slice(obj: dict[str, Any], source: str = "<input>", loc: str = "") -> dict[str, Any]:
    """Return a v1 ResourceSlice dict (v1beta1 `basic:` unwrapped); InputError naming the bad field."""
    prefix = f"{loc}." if loc else ""
    version = obj.get("apiVersion")
    if version not in _VERSIONS or obj.get("kind") != "ResourceSlice":
        raise InputError.single(
            source, f"{prefix}apiVersion", f"not a resource.k8s.io ResourceSlice: {version}/{obj.get('kind')}"
        )
    spec = obj.get("spec")
    if not isinstance(spec, dict) or not isinstance(spec.get("driver"), str):
        raise InputError.single(source, f"{prefix}spec.driver", "missing or not a string")
    pool = spec.get("pool")
    if (
        not isinstance(pool, dict)
        or not isinstance(pool.get("name"), str)
        or not isinstance(pool.get("generation", 0), int)
    ):
        raise InputError.single(source, f"{prefix}spec.pool", "needs name (string) and generation (int)")
    devices = []
    for i, device in enumerate(spec.get("devices") or []):
        if not isinstance(device, dict) or not isinstance(device.get("name"), str):
            raise InputError.single(source, f"{prefix}spec.devices[{i}].name", "missing device name")
        body = device.get("basic", device) if version.endswith("v1beta1") else device
        if not isinstance(body, dict):
            raise InputError.single(source, f"{prefix}spec.devices[{i}].basic", "not a mapping")
        out = {k: v for k, v in body.items() if k != "basic"}
        out["name"] = device["name"]
        for kind in ("attributes", "capacity"):
            if not isinstance(out.get(kind) or {}, dict):
                raise InputError.single(source, f"{prefix}spec.devices[{i}].{kind}", "not a mapping")
        devices.append(out)
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": dict(obj.get("metadata") or {}),
        "spec": {**spec, "devices": devices},
    }


def parse_resource_slices(text: str, source: str = "<input>") -> list[dict[str, Any]]:
    """Slices in one JSON/YAML text: a List, a single object, or several YAML documents."""
    try:
        docs = [d for d in yaml.load_all(text, Loader=yaml.CSafeLoader) if d is not None]
    except yaml.YAMLError as exc:
        raise InputError.single(source, "", f"not valid YAML/JSON: {exc}") from None
    slices: list[dict[str, Any]] = []
    problems: list[Problem] = []
    for d, doc in enumerate(docs):
        if not isinstance(doc, dict):
            problems.append(Problem(source, f"[{d}]", "", "document is not a mapping"))
            continue
        items = doc.get("items") if doc.get("kind", "").endswith("List") else [doc]
        for i, item in enumerate(items or []):
            loc = f"items[{i}]" if item is not doc else (f"[{d}]" if len(docs) > 1 else "")
            try:
                slices.append(normalise_slice(item if isinstance(item, dict) else {}, source, loc))
            except InputError as exc:
                problems.extend(exc.problems)
    if problems:
        raise InputError(problems)
    return slices


def _files(paths: Iterable[Path]) -> list[Path]:
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            out.extend(sorted(p for p in path.rglob("*") if p.suffix in (".json", ".yaml", ".yml")))
        else:
            out.append(path)  # the bounded reader refuses what is missing or not a regular file
    return out


def read_resource_slices(*paths: str | Path) -> list[Pool]:
    """Read files/folders; group by node, driver and pool, keeping only each pool's highest generation."""
    pools: dict[tuple[str, str, str], Pool] = {}
    for path in _files(Path(p) for p in paths):
        for item in parse_resource_slices(read_text(path, MAX_DATA_BYTES), str(path)):
            spec = item["spec"]
            node = spec.get("nodeName") or ""
            key = (node, spec["driver"], spec["pool"]["name"])
            generation = int(spec["pool"].get("generation", 0))
            current = pools.get(key)
            if current is None or generation > current.generation:
                pools[key] = current = Pool(node, spec["driver"], spec["pool"]["name"], generation)
            if generation == current.generation:
                current.slices.append(item)
    return [pools[k] for k in sorted(pools)]
