"""`init` refuses, before reading the cluster, a name or domain the spec it writes would fail on."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuplatform.cli import main
from gpuplatform.testing import wave_cluster
from tests.gates.harness import fleet_doc, load_platform


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--name", "../x"),
        ("--name", "Prod"),
        ("--name", "a" * 64),
        ("--domain", "a b"),
        ("--domain", "-x.example.com"),
    ],
)
def test_init_refuses_a_name_or_domain_check_would_refuse(tmp_path: Path, option: str, value: str) -> None:
    # GIVEN a healthy snapshot
    snap = wave_cluster(load_platform(tmp_path, fleet_doc()), "base").write(tmp_path / "snap")
    out = tmp_path / "spec.yaml"
    args = {"--name": "prod", "--domain": "gpu.example.com"} | {option: value}
    # WHEN init is asked for a spec with that name or domain
    result = CliRunner().invoke(
        main, ["init", "--snapshot", str(snap), "--out", str(out), *sum(args.items(), ())]
    )
    # THEN it refuses up front, naming the option, and writes nothing
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: {option}: {value!r} is not a DNS"), result.stderr
    assert not out.exists()
