"""Helm storage Secrets as a cluster holds them (helm/helm pkg/storage/driver/util.go encodeRelease)."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import Any

__all__ = ["release_secret", "write_captured"]


def release_secret(
    name: str, namespace: str, values: dict[str, Any], *, chart_version: str = "v26.3.1", revision: int = 3
) -> dict[str, Any]:
    """One `kubectl get secret -o json` item of a deployed gpu-operator release."""
    release = {
        "name": name,
        "namespace": namespace,
        "version": revision,
        "info": {"status": "deployed"},
        "chart": {"metadata": {"name": "gpu-operator", "version": chart_version}},
        "config": values,
        "manifest": "---\n# ...",
    }
    helm = base64.b64encode(gzip.compress(json.dumps(release).encode())).decode()
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": f"sh.helm.release.v1.{name}.v{revision}",
            "namespace": namespace,
            "labels": {"owner": "helm", "name": name, "status": "deployed"},
        },
        "type": "helm.sh/release.v1",
        "data": {"release": base64.b64encode(helm.encode()).decode()},
    }


def write_captured(
    snapshot: Path, name: str, namespace: str, values: dict[str, Any], chart_version: str = "v26.3.1"
) -> Path:
    """A snapshot's `helm/<namespace>_<name>.json`, as `gpuplatform snapshot` writes it."""
    folder = snapshot / "helm"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{namespace}_{name}.json"
    doc = {
        "name": name,
        "namespace": namespace,
        "chart": "gpu-operator",
        "chartVersion": chart_version,
        "revision": 3,
        "status": "deployed",
        "values": values,
    }
    path.write_text(json.dumps(doc))
    return path
