"""One feature-gate table: the CEL environment, the scheduler model and the rules read `versions`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gpuplatform.cel.environment import DEFAULT_GATES, SUPPORTED_RELEASES, environment_for
from gpuplatform.cel.errors import CelError
from gpuplatform.cli import main
from gpuplatform.load.stacks import load_stack
from gpuplatform.simulate.devices import DeviceMatcher
from gpuplatform.versions import KUBE_FEATURE_GATES, cluster_gates, kube_gates
from tests.specs import minimal_spec, write_spec


@pytest.mark.parametrize("release", SUPPORTED_RELEASES)
def test_the_cel_environment_knows_every_gate_of_the_release_table(release: str) -> None:
    assert DEFAULT_GATES[release] == kube_gates(release)
    for name in kube_gates(release):
        environment_for(release, True, {name: True})  # no gate of the release is refused
    missing = sorted(n for n, g in KUBE_FEATURE_GATES.items() if release not in g.releases)
    for name in missing:
        with pytest.raises(CelError, match=f"does not exist in Kubernetes {release}"):
            environment_for(release, True, {name: True})


def test_a_declared_gate_the_release_lacks_is_no_gate_of_the_cluster() -> None:
    gates = cluster_gates({"DRAExtendedResource": True, "DRAListTypeAttributes": True}, "1.35")
    assert gates["DRAExtendedResource"] is True
    assert "DRAListTypeAttributes" not in gates


def _bridge_spec(tmp_path: Path, version: str, gate: bool) -> Path:
    doc: dict[str, Any] = minimal_spec()
    spec = doc["spec"]
    spec["kubernetes"] = {"version": version, "featureGates": {"DRAExtendedResource": gate}}
    spec["bridges"] = [{"name": "legacy-bridge"}]
    spec["waves"].insert(3, {"name": "bridge", "stage": "compatibility-bridge", "bridges": ["legacy-bridge"]})
    return write_spec(tmp_path / "lab.yaml", doc)


@pytest.mark.parametrize(
    ("version", "gate", "accepted"),
    [
        ("1.34.2", True, False),  # the scheduler before 1.35.0 (GP180, and the bridged pod never lands)
        ("1.35.1", True, True),
        ("1.35.1", False, False),  # GP111: the API server drops extendedResourceName
        ("1.36.1", True, True),
        ("1.36.1", False, False),  # turned off explicitly
    ],
)
def test_check_and_simulate_give_one_verdict_on_a_bridge(
    tmp_path: Path, version: str, gate: bool, accepted: bool
) -> None:
    spec = str(_bridge_spec(tmp_path, version, gate))
    checked = CliRunner().invoke(main, ["check", spec])
    simulated = CliRunner().invoke(main, ["simulate", spec])
    assert (checked.exit_code, simulated.exit_code) == ((0, 0) if accepted else (1, 1)), checked.stderr


def test_the_simulated_scheduler_compiles_selectors_with_a_gate_of_the_release(tmp_path: Path) -> None:
    (loaded,) = load_stack(_bridge_spec(tmp_path, "1.35.1", True))
    matcher = DeviceMatcher(loaded.platform)
    assert matcher.count(("device.driver == 'gpu.nvidia.com'",), "new") == 8
