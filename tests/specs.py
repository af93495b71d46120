"""Small spec documents for tests, built as data so each test states only what it changes."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

from gpuplatform.load.stacks import load_stack
from gpuplatform.model.platform import Platform
from gpuplatform.output.yaml import dump_yaml
from gpuplatform.testing import Cluster, pod, wave_cluster
from tests.conftest import REPO

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


def short_spec(moves_in: str) -> dict[str, Any]:
    """The minimal spec with a 4 x 4-GPU Deployment moving in `moves_in`: more than the pools can
    place in some waves (GP280)."""
    spec = minimal_spec()
    spec["spec"]["workloads"] = [
        {
            "kind": "Deployment",
            "namespace": "team-a",
            "name": "big",
            "gpus": 4,
            "replicas": 4,
            "tier": "full",
            "movesIn": moves_in,
        }
    ]
    return spec


def write_spec(path: Path, doc: Any) -> Path:
    """Write `doc` as YAML to `path` with the package's dumper, which quotes every string a reader
    would take for something else (PyYAML's writes `y` plain, which Helm and the loader read as true)."""
    path.write_text(dump_yaml(doc))
    return path


def write_overlay(path: Path, spec: dict[str, Any], name: str | None = None) -> Path:
    """Write a `PlatformOverlay` with `spec` (and `metadata.name`, when given) to `path`."""
    doc: dict[str, Any] = {"apiVersion": "gpuplatform.dev/v1alpha1", "kind": "PlatformOverlay", "spec": spec}
    if name is not None:
        doc["metadata"] = {"name": name}
    return write_spec(path, doc)


def listing(root: Path) -> dict[str, Any]:
    """Every entry under `root`: file bytes, link targets, folders (never through a link)."""
    out: dict[str, Any] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                out[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                out[rel] = ("dir",)
            else:
                out[rel] = ("file", path.read_bytes())
    return out


def python_stack(
    path: Path, *, names: tuple[str, ...] = ("lab",), wave: str | None = None, body: str = ""
) -> Path:
    """A Python stack exposing `minimal_spec()` platforms named `names` (after running `body`)."""
    path.write_text(
        "from gpuplatform.model import Platform\n"
        "from tests.specs import minimal_spec\n"
        "doc = minimal_spec()\n"
        + body
        + (f"doc['spec']['activeWave'] = {wave!r}\n" if wave else "")
        + f"platforms = [Platform.model_validate({{**doc['spec'], 'name': n}}) for n in {names!r}]\n"
    )
    return path


def reference_platform() -> Platform:
    """The reference stack's platform (`stacks/reference.py`)."""
    return load_stack(REPO / "stacks" / "reference.py")[0].platform


def trainer_pod(name: str = "trainer-7d4f9-x2x") -> dict[str, Any]:
    """A pod of the legacy `ml/trainer` Deployment (its ReplicaSet `trainer-7d4f9`), 2 GPUs of the
    device plugin on gpu-legacy-01."""
    return pod(
        name,
        "ml",
        "gpu-legacy-01",
        gpus=2,
        labels={"pod-template-hash": "7d4f9"},
        owners=[{"kind": "ReplicaSet", "name": "trainer-7d4f9", "controller": True}],
    )


def healthy_cluster() -> Cluster:
    """The reference platform's model cluster in its native-claim-pilot wave, with a legacy trainer."""
    cluster = wave_cluster(reference_platform(), "native-claim-pilot")
    cluster.list("pods").append(trainer_pod())
    cluster.kinds["replicasets"] = [
        {
            "metadata": {
                "name": "trainer-7d4f9",
                "namespace": "ml",
                "ownerReferences": [{"kind": "Deployment", "name": "trainer", "controller": True}],
            }
        }
    ]
    return cluster
