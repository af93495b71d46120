"""The Argo CD wrapper of the DRA driver chart, built by the real kustomize with the real helm.

kustomize (v5.5) runs helm only with `--enable-helm`, which Argo CD's repo-server gets from
`kustomize.buildOptions` in argocd-cm; it pulls the chart into `charts/<name>-<version>/<name>`
unless it is already there, so the reference copy is put there (no network). kustomize insists on
helm v3 (`helm version -c --short`); the shim answers that and passes everything else to the helm
`.ci/setup-tools` installed.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.realtools.conftest import Helm, Rendered, chart_folder


def _wrappers(rendered: Rendered) -> list[Path]:
    return sorted(
        p.parent
        for p in rendered.root.rglob("kustomization.yaml")
        if "helmCharts" in yaml.safe_load(p.read_text())
    )


def test_the_wrapper_renders_the_chart_without_its_bridge(
    rendered: Rendered, kubectl: str, helm: Helm, tmp_path: Path
) -> None:
    shim = tmp_path / "helm"
    shim.write_text(
        f'#!/bin/sh\nif [ "$1" = version ]; then echo v3.17.0; exit 0; fi\nexec {helm.binary} "$@"\n'
    )
    shim.chmod(0o755)
    wrappers = _wrappers(rendered)
    assert wrappers
    for source in wrappers[:2]:
        [chart] = yaml.safe_load((source / "kustomization.yaml").read_text())["helmCharts"]
        local = chart_folder(chart["name"], chart["version"])
        if local is None:
            pytest.skip(f"no reference copy of {chart['name']} {chart['version']}")
        folder = tmp_path / source.name / source.parent.parent.parent.name
        shutil.copytree(source, folder)
        shutil.copytree(local, folder / "charts" / f"{chart['name']}-{chart['version']}" / chart["name"])
        done = subprocess.run(
            [kubectl, "kustomize", "--enable-helm", "--helm-command", str(shim), str(folder)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        docs = [d for d in yaml.safe_load_all(done.stdout) if d]
        classes = {d["metadata"]["name"]: d["spec"] for d in docs if d["kind"] == "DeviceClass"}
        assert "gpu.nvidia.com" in classes
        assert not [n for n, spec in classes.items() if "extendedResourceName" in spec]
        [plugin] = [
            d for d in docs if d["kind"] == "DaemonSet" and d["metadata"]["name"].endswith("kubelet-plugin")
        ]
        assert plugin["spec"]["template"]["spec"]["nodeSelector"] == {"nvidia.com/dra-kubelet-plugin": "true"}
