"""Running releases: Helm storage Secrets decoded, captured by snapshot, read back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuplatform.adopt.running import decode_release_secret, load_running_releases, read_running_values
from gpuplatform.cli import main
from gpuplatform.errors import InputError
from tests.adopt.helm_storage import release_secret, write_captured

VALUES = {"driver": {"version": "580.95.05"}, "mig": {"strategy": "mixed"}}


def test_a_storage_secret_decodes_to_its_chart_and_user_values() -> None:
    release = decode_release_secret(release_secret("gpu-operator", "gpu-operator", VALUES), "s")
    assert (release.chart, release.chart_version, release.revision, release.status) == (
        "gpu-operator",
        "v26.3.1",
        3,
        "deployed",
    )
    assert release.values == VALUES


def test_a_secret_that_is_not_a_release_is_bad_input() -> None:
    with pytest.raises(InputError, match="not a Helm release Secret"):
        decode_release_secret({"data": {"release": "bm90IGhlbG0="}}, "s")


def test_snapshot_captures_the_operator_release(
    fake_kubectl: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a cluster whose gpu-operator release is in Helm storage (a fake kubectl answers)
    secrets = {"items": [release_secret("gpu-operator", "gpu-operator", VALUES, revision=r) for r in (2, 3)]}
    (fake_kubectl / "secrets.json").write_text(json.dumps(secrets))
    # WHEN a snapshot is taken
    out = tmp_path / "snap"
    result = CliRunner().invoke(main, ["snapshot", "--out", str(out)])
    # THEN the newest revision's chart and values are kept
    assert result.exit_code == 0, result.output
    assert "helm release gpu-operator/gpu-operator: ok" in result.stdout
    [release] = load_running_releases(out).values()
    assert (release.name, release.revision, release.values) == ("gpu-operator", 3, VALUES)
    # AND a forbidden read makes the snapshot incomplete
    monkeypatch.setenv("FAKE_FORBIDDEN", "secrets")
    result = CliRunner().invoke(main, ["snapshot", "--out", str(tmp_path / "snap2")])
    assert result.exit_code == 1 and "helm release gpu-operator/gpu-operator" in result.stderr


def test_helm_get_values_output_and_captured_files_are_both_read(tmp_path: Path) -> None:
    plain = tmp_path / "values.yaml"
    plain.write_text("USER-SUPPLIED VALUES:\nmig:\n  strategy: mixed\n")
    assert read_running_values(plain) == ({"mig": {"strategy": "mixed"}}, None)
    (tmp_path / "empty.yaml").write_text("null\n")
    assert read_running_values(tmp_path / "empty.yaml") == ({}, None)
    values, release = read_running_values(write_captured(tmp_path, "ops", "gpu", VALUES))
    assert values == VALUES and release is not None and (release.namespace, release.name) == ("gpu", "ops")
    (tmp_path / "list.yaml").write_text("- a\n")
    with pytest.raises(InputError, match="helm get values"):
        read_running_values(tmp_path / "list.yaml")
