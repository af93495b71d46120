"""`evidence` believes a snapshot's manifest, not the files beside it; refuses old snapshots and links."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gpuplatform.cli import main
from gpuplatform.testing import device_plugin_pod
from tests.conftest import REPO
from tests.specs import healthy_cluster

STACK = str(REPO / "stacks" / "reference.py")
WAVE = "native-claim-pilot"


def _evidence(folder: Path, *more: str) -> Any:
    args = ["evidence", STACK, "--platform", "reference", "--wave", WAVE, "--snapshot", str(folder), *more]
    return CliRunner().invoke(main, args)


def _edit_manifest(folder: Path, **changed: Any) -> None:
    path = folder / "manifest.json"
    manifest = json.loads(path.read_text()) | changed
    path.write_text(json.dumps({k: v for k, v in manifest.items() if v is not None}))


def _ago(delta: timedelta) -> str:
    return (datetime.now(UTC) - delta).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_a_stale_kind_file_the_manifest_lists_as_missing_is_unknown(tmp_path: Path) -> None:
    # GIVEN a cluster running two allocators on a DRA node, whose pods could not be read this time,
    # and a pods.json left from an earlier, healthy snapshot
    healthy = healthy_cluster().write(tmp_path / "snap")
    broken = healthy_cluster()
    broken.list("pods").append(device_plugin_pod("gpu-dra-01"))
    assert _evidence(broken.write(tmp_path / "complete")).exit_code == 1
    _edit_manifest(healthy, missing=["pods"])
    # WHEN evidence judges it / THEN no gate that reads pods holds
    result = _evidence(healthy)
    assert result.exit_code == 1, result.output
    assert "All gates hold" not in result.stdout
    assert "Missing from the snapshot: pods." in result.stdout


def test_a_kind_file_the_manifest_does_not_record_as_read_is_unknown(tmp_path: Path) -> None:
    folder = healthy_cluster().write(tmp_path / "snap")
    manifest = json.loads((folder / "manifest.json").read_text())
    _edit_manifest(folder, kinds={k: v for k, v in manifest["kinds"].items() if k != "pods"})
    result = _evidence(folder)
    assert result.exit_code == 1
    assert "NOT all gates hold" in result.stdout


@pytest.mark.parametrize(
    ("manifest", "loc"),
    [({"missing": "pods"}, "missing"), ({"kinds": ["pods"]}, "kinds"), ({"time": "yesterday"}, "time")],
)
def test_a_malformed_manifest_is_refused_with_its_field(
    tmp_path: Path, manifest: dict[str, Any], loc: str
) -> None:
    folder = healthy_cluster().write(tmp_path / "snap")
    _edit_manifest(folder, **manifest)
    result = _evidence(folder)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {folder / 'manifest.json'}:{loc}: expected ")


def test_an_old_snapshot_is_refused_unless_told(tmp_path: Path) -> None:
    folder = healthy_cluster().write(tmp_path / "snap")
    _edit_manifest(folder, started=_ago(timedelta(days=2)))
    result = _evidence(folder)
    assert result.exit_code == 2
    assert result.stderr.startswith(
        f"error: {folder / 'manifest.json'}:started: the snapshot was taken 2d ago"
    )
    assert "--max-age 24h" in result.stderr and "--allow-stale" in result.stderr
    assert _evidence(folder, "--max-age", "3d").exit_code == 0
    assert _evidence(folder, "--allow-stale").exit_code == 0
    assert _evidence(folder, "--max-age", "1h").exit_code == 2


def test_a_young_snapshot_passes_the_default_bound(tmp_path: Path) -> None:
    folder = healthy_cluster().write(tmp_path / "snap")
    _edit_manifest(folder, started=_ago(timedelta(hours=23)))
    assert _evidence(folder).exit_code == 0


@pytest.mark.parametrize(
    "change",
    [{"time": None}, {"time": _ago(-timedelta(days=1))}, "no-manifest"],
    ids=["undated", "future", "no-manifest"],
)
def test_an_undated_or_future_snapshot_is_refused(tmp_path: Path, change: Any) -> None:
    folder = healthy_cluster().write(tmp_path / "snap")
    if change == "no-manifest":
        (folder / "manifest.json").unlink()
    else:
        _edit_manifest(folder, **change)
    result = _evidence(folder)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {folder / 'manifest.json'}:time: ")
    assert _evidence(folder, "--allow-stale").exit_code == 0


def test_a_max_age_that_is_not_a_duration_is_bad_input(tmp_path: Path) -> None:
    folder = healthy_cluster().write(tmp_path / "snap")
    result = _evidence(folder, "--max-age", "a day")
    assert result.exit_code == 2
    assert result.stderr == "error: --max-age: 'a day' is not a duration like 30m, 24h or 7d\n"


@pytest.mark.parametrize("planted", ["pods.json", "manifest.json", "logs", "logs/x_y.log"])
def test_a_link_in_a_snapshot_is_refused_not_followed(tmp_path: Path, planted: str) -> None:
    # GIVEN a snapshot in which one entry was replaced by a link to a file elsewhere
    folder = healthy_cluster().write(tmp_path / "snap")
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "x_y.log").write_text("SECRET=hunter2\n")
    target = secret if planted == "logs" else secret / "x_y.log"
    (folder / planted).unlink() if (folder / planted).is_file() else None
    if planted == "logs":
        for path in (folder / "logs").iterdir():
            path.unlink()
        (folder / "logs").rmdir()
    (folder / planted).parent.mkdir(exist_ok=True)
    (folder / planted).symlink_to(target)
    # WHEN evidence reads it / THEN it refuses, naming the link, and prints nothing of its target
    result = _evidence(folder, "--format", "json")
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: {folder / planted}: is a symbolic link")
    assert "hunter2" not in result.output


@pytest.mark.parametrize("planted", ["nodes.json", "resourceslices.json"])
def test_check_does_not_follow_a_link_in_its_snapshot(tmp_path: Path, planted: str) -> None:
    folder = healthy_cluster().write(tmp_path / "snap")
    (tmp_path / planted).write_text((folder / planted).read_text())
    (folder / planted).unlink()
    (folder / planted).symlink_to(tmp_path / planted)
    result = CliRunner().invoke(main, ["check", STACK, "--snapshot", str(folder)])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: {folder / planted}: is a symbolic link")


def test_a_snapshot_that_finished_before_it_started_is_refused(tmp_path: Path) -> None:
    # issue 39 (low): a manifest that finished 30 years before it started was accepted
    folder = healthy_cluster().write(tmp_path / "snap")
    _edit_manifest(folder, started=_ago(timedelta(minutes=1)), time="1996-01-01T00:00:00Z")
    result = _evidence(folder, "--allow-stale")
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {folder / 'manifest.json'}:time: 1996-01-01T00:00:00Z is before")
