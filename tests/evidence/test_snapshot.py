"""`gpuplatform snapshot` against a fake kubectl on PATH: complete, forbidden, unreachable, absent."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuplatform.cli import main
from gpuplatform.evidence.snapshot import load_snapshot
from tests.evidence.builders import Cluster

FAKE = """#!/bin/sh
# answers `kubectl [--context C] get <resource> ... -o json` from $FAKE_DIR/<kind>.json
[ "$1" = "--context" ] && shift 2
if [ -n "${FAKE_UNREACHABLE:-}" ] && [ "$1" != config ]; then
  echo 'Unable to connect to the server: dial tcp 10.0.0.1:6443: i/o timeout' >&2; exit 1
fi
case "$1" in
  config) echo fake-context; exit 0;;
  version) echo '{"serverVersion": {"gitVersion": "v1.36.1"}}'; exit 0;;
  exec) [ -f "$FAKE_DIR/smi.csv" ] && cat "$FAKE_DIR/smi.csv" && exit 0; echo 'error: pod not found' >&2; exit 1;;
  logs) [ -f "$FAKE_DIR/logs/${3}_${4}.log" ] && cat "$FAKE_DIR/logs/${3}_${4}.log" && exit 0; echo 'error: container is waiting to start' >&2; exit 1;;
  get) kind=${2%%.*}; echo "$*" >> "$FAKE_DIR/calls";;
esac
case " ${FAKE_FORBIDDEN:-} " in *" $kind "*) echo "Error from server (Forbidden): $kind is forbidden: User cannot list resource" >&2; exit 1;; esac
cat "$FAKE_DIR/$kind.json"
"""


@pytest.fixture
def fake_kubectl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    data = Cluster.healthy().write(tmp_path / "cluster")
    (data / "secrets.json").write_text('{"items": []}')  # no Helm release of the GPU Operator
    for kind in ("customresourcedefinitions", "deployments", "configmaps"):  # no Argo CD, no Flux
        (data / f"{kind}.json").write_text('{"items": []}')
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "kubectl").write_text(FAKE)
    (bin_dir / "kubectl").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_DIR", str(data))
    return data


def test_snapshot_reads_every_kind(fake_kubectl: Path, tmp_path: Path) -> None:
    out = tmp_path / "snap"
    result = CliRunner().invoke(main, ["snapshot", "--out", str(out)])
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["context"] == "fake-context"
    assert manifest["serverVersion"] == "v1.36.1"
    assert manifest["missing"] == []
    assert len(load_snapshot(out).items("resourceslices") or []) == 1
    # the engines' preflight reads only their CRDs, controllers and argocd-cm
    calls = (fake_kubectl / "calls").read_text().splitlines()
    assert "get configmaps --field-selector metadata.name=argocd-cm -A -o json" in calls
    assert "get deployments.apps -l app.kubernetes.io/part-of in (argocd,flux) -A -o json" in calls
    crds = "appprojects.argoproj.io helmreleases.helm.toolkit.fluxcd.io --ignore-not-found"
    assert f"get customresourcedefinitions.apiextensions.k8s.io {crds} -o json" in calls
    # the validation pod's log is kept beside the JSON, named <namespace>_<pod>.log
    [(target, state)] = manifest["logs"].items()
    assert target.startswith("gpu-dra-pilot/gpu-dra-validation-") and state == "ok"
    namespace, pod = target.split("/")
    assert "(UUID: GPU-" in (out / "logs" / f"{namespace}_{pod}.log").read_text()
    assert load_snapshot(out).logs[target].startswith("GPU 0: NVIDIA H100 80GB HBM3")


def test_extra_logs_and_a_log_that_cannot_be_read(fake_kubectl: Path, tmp_path: Path) -> None:
    out = tmp_path / "snap"
    result = CliRunner().invoke(main, ["snapshot", "--out", str(out), "--logs", "ml/trainer-7d4f9-x2x"])
    assert result.exit_code == 1
    assert "logs ml/trainer-7d4f9-x2x: missing: error: container is waiting to start" in result.stdout
    assert "missing logs ml/trainer-7d4f9-x2x" in result.stderr


def test_forbidden_kind_is_kept_out_and_named(
    fake_kubectl: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_FORBIDDEN", "resourceclaims")
    out = tmp_path / "snap"
    result = CliRunner().invoke(main, ["snapshot", "--out", str(out)])
    assert result.exit_code == 1
    assert "missing resourceclaims" in result.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["kinds"]["resourceclaims"].startswith("missing: forbidden")
    assert load_snapshot(out).items("resourceclaims") is None
    assert load_snapshot(out).items("nodes")


def test_unreachable_cluster_is_a_clear_message(
    fake_kubectl: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_UNREACHABLE", "1")
    out = tmp_path / "snap"
    result = CliRunner().invoke(main, ["snapshot", "--out", str(out)])
    assert result.exit_code == 1
    # one line, not one per kind
    assert result.stdout == ""
    assert result.stderr == (
        f"error: {out}: cannot reach the cluster (context fake-context): "
        "Unable to connect to the server: dial tcp 10.0.0.1:6443: i/o timeout\n"
    )
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["unreachable"].startswith("Unable to connect") and "nodes" in manifest["missing"]


def test_nvidia_smi_through_kubectl_exec(fake_kubectl: Path, tmp_path: Path) -> None:
    (fake_kubectl / "smi.csv").write_text(
        "name, memory.total [MiB], uuid\nNVIDIA H100 80GB HBM3, 81559 MiB, GPU-1\n"
    )
    out = tmp_path / "snap"
    result = CliRunner().invoke(main, ["snapshot", "--out", str(out), "--nvidia-smi", "gpu-dra-pilot/v-1"])
    assert result.exit_code == 0, result.output
    assert load_snapshot(out).nvidia_smi["gpu-dra-pilot/v-1"][0]["uuid"] == "GPU-1"


def test_missing_kubectl_is_bad_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    result = CliRunner().invoke(main, ["snapshot", "--out", str(tmp_path / "snap")])
    assert result.exit_code == 2
    assert "kubectl is not on PATH" in result.stderr
