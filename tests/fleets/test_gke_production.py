"""The production cluster of issue 25 and its staging overlay: every command agrees, on 1.35 and 1.36."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from gpuplatform.cli import main

HERE = Path(__file__).parent


def _spec(tmp_path: Path, version: str) -> list[str]:
    doc = yaml.safe_load((HERE / "gke-production.yaml").read_text())
    doc["spec"]["kubernetes"]["version"] = version
    spec = tmp_path / "gke-production.yaml"
    spec.write_text(yaml.safe_dump(doc, sort_keys=False))
    overlay = tmp_path / "gke-staging.yaml"
    overlay.write_text((HERE / "gke-staging.yaml").read_text())
    return [str(spec)]


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


@pytest.mark.parametrize("version", ["1.35.2", "1.36.1"])
@pytest.mark.parametrize("overlay", [(), ("--overlay", "gke-staging.yaml")])
def test_the_gke_production_cluster_passes_every_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str, overlay: tuple[str, ...]
) -> None:
    monkeypatch.chdir(tmp_path)
    (spec,) = _spec(tmp_path, version)
    code, out = _run("check", spec, *overlay)
    assert code == 0, out
    # the one warning is the MIG CronJob's window between its nodes' drain and its own move
    warnings = [line for line in out.splitlines() if line.startswith(("warning:", "error:"))]
    assert len(warnings) == 1 and "GP280" in warnings[0] and "research/nightly-eval" in warnings[0]
    code, out = _run("simulate", spec, *overlay, "--all")
    assert code == 0, out
    assert "52 of 52 transition replays proven" in out
    code, out = _run("capacity", spec, *overlay, "--all")
    short = [line.strip() for line in out.splitlines() if "does not fit" in line]
    assert code == 1 and short and all("research/nightly-eval" in line for line in short), out
    assert [line.split(":")[0] for line in short if line.startswith("wave ")] == ["wave mig"]
    code, out = _run("synth", spec, *overlay, "--out", str(tmp_path / "dist"))
    assert code == 0, out
    handoffs = {p.name for p in (tmp_path / "dist").rglob("nodepoolhandoff_*.yaml")}
    assert {"nodepoolhandoff_a100-mig.yaml", "nodepoolhandoff_a100-whole.yaml"} <= handoffs
