"""`gpuplatform snapshot` against a fake kubectl on PATH: complete, forbidden, unreachable, absent."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import gpuplatform.snapshot.kubectl as kubectl_module
import gpuplatform.snapshot.take as snapshot_module
from gpuplatform.cli import main
from gpuplatform.snapshot.read import load_snapshot
from tests.specs import healthy_cluster, listing

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
[ -f "$FAKE_DIR/$kind.json" ] || { echo "error: the server doesn't have a resource type \"$kind\"" >&2; exit 1; }
cat "$FAKE_DIR/$kind.json"
"""


@pytest.fixture
def fake_kubectl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    data = healthy_cluster().write(tmp_path / "cluster")
    (data / "secrets.json").write_text('{"items": []}')  # no Helm release of the GPU Operator
    # no Argo CD, no Flux; the DaemonSets the model does not hold
    for kind in ("customresourcedefinitions", "deployments", "configmaps", "daemonsets", "namespaces"):
        (data / f"{kind}.json").write_text('{"items": []}')
    for kind in ("clusterqueues", "localqueues", "resourceflavors", "workloads"):  # no Kueue
        (data / f"{kind}.json").unlink(missing_ok=True)
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
    crds = (
        "appprojects.argoproj.io helmreleases.helm.toolkit.fluxcd.io ocirepositories.source.toolkit.fluxcd.io "
        "prometheusrules.monitoring.coreos.com --ignore-not-found"
    )
    assert f"get customresourcedefinitions.apiextensions.k8s.io {crds} -o json" in calls
    # and the manifest says which CRDs it asked for: an absent one is then known not to be served
    assert "prometheusrules.monitoring.coreos.com" in manifest["selected"]["customresourcedefinitions"]
    # the validation pod's log is kept beside the JSON, named <namespace>_<pod>.log (as the gate
    # Jobs' pods' logs are)
    assert set(manifest["logs"].values()) == {"ok"}
    [target] = [t for t in manifest["logs"] if t.startswith("gpu-dra-pilot/")]
    assert target.startswith("gpu-dra-pilot/gpu-dra-validation-")
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


def _snap(out: Path, *more: str) -> Any:
    return CliRunner().invoke(main, ["snapshot", "--out", str(out), *more])


def test_a_kind_that_can_no_longer_be_read_leaves_no_file_from_the_earlier_run(
    fake_kubectl: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a complete snapshot in DIR
    out = tmp_path / "snap"
    assert _snap(out).exit_code == 0
    assert (out / "pods.json").is_file()
    # WHEN the next snapshot into DIR may not list pods
    monkeypatch.setenv("FAKE_FORBIDDEN", "pods")
    assert _snap(out).exit_code == 1
    # THEN DIR holds the new snapshot only: no pods.json, and nothing beside DIR
    assert not (out / "pods.json").exists()
    assert load_snapshot(out).items("pods") is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin", "cluster", "snap"]


def test_an_unreachable_cluster_replaces_the_earlier_snapshot_too(
    fake_kubectl: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "snap"
    assert _snap(out).exit_code == 0
    monkeypatch.setenv("FAKE_UNREACHABLE", "1")
    assert _snap(out).exit_code == 1
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json"]


def test_the_manifest_records_when_the_snapshot_was_taken(fake_kubectl: Path, tmp_path: Path) -> None:
    before = datetime.now(UTC).replace(microsecond=0)
    assert _snap(tmp_path / "snap").exit_code == 0
    manifest = json.loads((tmp_path / "snap" / "manifest.json").read_text())
    started = datetime.strptime(manifest["started"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    finished = datetime.strptime(manifest["time"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert before <= started <= finished <= datetime.now(UTC)


@pytest.mark.parametrize(
    "foreign", ["notes.txt", "logs/notes.txt", "pods.json/", "manifest-less"], ids=lambda f: f.strip("/")
)
def test_a_folder_that_is_not_a_snapshot_is_refused_and_kept(
    fake_kubectl: Path, tmp_path: Path, foreign: str
) -> None:
    # GIVEN a non-empty DIR that is not a snapshot gpuplatform took
    out = tmp_path / "snap"
    if foreign == "manifest-less":
        out.mkdir()
        (out / "pods.json").write_text('{"items": []}')
    else:
        assert _snap(out).exit_code == 0
        if foreign.endswith("/"):
            (out / foreign).unlink()
            (out / foreign).mkdir()
        else:
            (out / foreign).write_text("mine")
    before = listing(tmp_path)
    # WHEN a snapshot is taken into it / THEN it is refused (exit 2) and nothing changes
    result = _snap(out)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: {out}: is not empty and not a snapshot gpuplatform took")
    assert listing(tmp_path) == before


def test_an_empty_folder_is_filled(fake_kubectl: Path, tmp_path: Path) -> None:
    (tmp_path / "snap").mkdir()
    assert _snap(tmp_path / "snap").exit_code == 0
    assert (tmp_path / "snap" / "nodes.json").is_file()


def test_an_interrupted_snapshot_leaves_the_earlier_one_whole(
    fake_kubectl: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a complete snapshot
    out = tmp_path / "snap"
    assert _snap(out).exit_code == 0
    before = listing(tmp_path / "snap")
    # WHEN the next run is interrupted after it read some kinds, which changed meanwhile
    (fake_kubectl / "nodes.json").write_text('{"items": []}')
    real = snapshot_module.kubectl

    def interrupted(args: Any, context: Any) -> Any:
        if args[:2] == ["get", "pods"]:
            raise KeyboardInterrupt
        return real(args, context)

    monkeypatch.setattr(snapshot_module, "kubectl", interrupted)
    assert _snap(out).exit_code == 130
    # THEN the earlier snapshot is exactly as it was, and no half-written folder is left beside it
    assert listing(tmp_path / "snap") == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin", "cluster", "snap"]


def test_a_linked_out_folder_is_refused(fake_kubectl: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    assert _snap(elsewhere).exit_code == 0
    (tmp_path / "snap").symlink_to(elsewhere)
    before = listing(tmp_path)
    result = _snap(tmp_path / "snap")
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {tmp_path / 'snap'}: is a symbolic link")
    assert listing(tmp_path) == before


def test_a_cluster_without_kueue_has_no_kueue_objects_but_a_forbidden_one_is_missing(
    fake_kubectl: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "snap"
    assert CliRunner().invoke(main, ["snapshot", "--out", str(out)]).exit_code == 0
    manifest = json.loads((out / "manifest.json").read_text())
    for kind in ("clusterqueues", "localqueues", "resourceflavors", "workloads"):
        assert manifest["kinds"][kind] == "not installed: 0 object(s)"
    assert load_snapshot(out).items("workloads") == []
    assert load_snapshot(out).items("localqueues") == []
    (fake_kubectl / "pods.json").unlink()  # a built-in kind the server lacks is still missing
    monkeypatch.setenv("FAKE_FORBIDDEN", "workloads")
    again = tmp_path / "again"
    assert CliRunner().invoke(main, ["snapshot", "--out", str(again)]).exit_code != 0
    missing = json.loads((again / "manifest.json").read_text())["missing"]
    assert {"pods", "workloads"} <= set(missing)


def test_a_log_is_kept_to_its_last_bytes_and_the_manifest_says_so(
    fake_kubectl: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a pod labelled as a validation pod that prints more than a snapshot keeps (issue 39)
    monkeypatch.setattr(snapshot_module, "LOG_LIMIT", 4096)
    (fake_kubectl / "logs").mkdir(exist_ok=True)
    big = "".join(f"line {i}\n" for i in range(5000)) + "the end\n"
    (fake_kubectl / "logs" / "team_noisy.log").write_text(big)
    out = tmp_path / "snap"
    # WHEN it is read
    result = CliRunner().invoke(main, ["snapshot", "--out", str(out), "--logs", "team/noisy"])
    # THEN only its last bytes are kept, and the manifest says how many of how many
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["logLimitBytes"] == 4096
    assert manifest["logs"]["team/noisy"] == f"ok: the last 4096 of {len(big)} bytes"
    kept = (out / "logs" / "team_noisy.log").read_text()
    assert len(kept) == 4096 and big.endswith(kept)


def test_a_kubectl_call_that_times_out_is_missing_like_a_forbidden_one(
    fake_kubectl: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a kubectl whose read of ResourceClaims outlasts the timeout (issue 39: it crashed with exit 70)
    monkeypatch.setattr(kubectl_module, "TIMEOUT", 1)
    slow = fake_kubectl.parent / "bin" / "kubectl"
    slow.write_text(
        slow.read_text().replace(
            "get) kind=${2%%.*};", 'get) kind=${2%%.*}; [ "$kind" = resourceclaims ] && sleep 5;'
        )
    )
    out = tmp_path / "snap"
    # WHEN the snapshot is taken
    result = CliRunner().invoke(main, ["snapshot", "--out", str(out)])
    # THEN the kind is missing, with why, exit 1 as for a forbidden kind
    assert result.exit_code == 1, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["kinds"]["resourceclaims"] == "missing: kubectl timed out after 1 s"
    assert "resourceclaims" in manifest["missing"]


def test_a_pod_named_like_a_path_is_not_written_outside_the_snapshot(
    fake_kubectl: Path, tmp_path: Path
) -> None:
    # GIVEN a gate-labelled pod whose namespace and name read from the cluster are a path
    pods = json.loads((fake_kubectl / "pods.json").read_text())
    hostile = {**pods["items"][0]}
    hostile["metadata"] = {
        **hostile["metadata"],
        "name": "../../escaped",
        "namespace": "..",
        "labels": {"gpuplatform.dev/gate": "x"},
    }
    hostile["status"] = {"phase": "Running"}
    pods["items"].append(hostile)
    (fake_kubectl / "pods.json").write_text(json.dumps(pods))
    out = tmp_path / "snap"
    # WHEN it is read / THEN its log is missing, named, and nothing is written beside the snapshot
    result = CliRunner().invoke(main, ["snapshot", "--out", str(out)])
    assert result.exit_code == 1, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["logs"]["../../../escaped"] == "missing: not a Kubernetes namespace and pod name"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin", "cluster", "snap"]
