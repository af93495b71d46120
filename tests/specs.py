"""Small spec documents for tests, built as data so each test states only what it changes."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

_MINIMAL: dict[str, Any] = {
    "apiVersion": "gpuplatform.dev/v1alpha1",
    "kind": "Platform",
    "metadata": {"name": "lab"},
    "spec": {
        "domain": "lab.example.com",
        "draDriver": {"chartRepository": "oci://registry.example.com/charts"},
        "delivery": {"repoUrl": "https://git.example.com/lab.git"},
        "nodePools": [
            {"name": "old", "nodes": ["gpu-01"], "product": "A100-40GB", "gpusPerNode": 4},
            {"name": "new", "nodes": ["gpu-02"], "product": "H100-80GB", "migratesIn": "pilot"},
        ],
        "tiers": [{"name": "full", "deviceType": "gpu"}],
        "tenants": [
            {
                "name": "team-a",
                "tiers": ["full"],
                "groups": ["team-a-ops"],
                "claimTemplates": [{"name": "one-gpu", "tier": "full"}],
            }
        ],
        "waves": [
            {"name": "base", "stage": "baseline"},
            {"name": "pilot", "stage": "pilot-pool"},
            {"name": "claims", "stage": "native-claim-pilot", "tiers": ["full"], "tenants": ["team-a"]},
            {"name": "cutover", "stage": "final-cutover"},
        ],
        "activeWave": "pilot",
    },
}


def minimal_spec() -> dict[str, Any]:
    """A valid two-pool spec with one tier, one tenant and four waves (a fresh copy)."""
    return copy.deepcopy(_MINIMAL)


def write_spec(path: Path, doc: Any) -> Path:
    """Write `doc` as YAML to `path` (tests only; the package has its own dumper)."""
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def write_overlay(path: Path, spec: dict[str, Any], name: str | None = None) -> Path:
    """Write a `PlatformOverlay` with `spec` (and `metadata.name`, when given) to `path`."""
    doc: dict[str, Any] = {"apiVersion": "gpuplatform.dev/v1alpha1", "kind": "PlatformOverlay", "spec": spec}
    if name is not None:
        doc["metadata"] = {"name": name}
    return write_spec(path, doc)
