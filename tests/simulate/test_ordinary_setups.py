"""No false alarms on ordinary setups: well-known node labels, an external NFD, a host driver."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gpuplatform.cli import main
from gpuplatform.kube.nodes import well_known_labels
from gpuplatform.load.stacks import load_stack
from gpuplatform.plan.waves import plan_platform
from gpuplatform.simulate.replay import _cluster
from tests.conftest import REPO
from tests.specs import minimal_spec, write_overlay, write_spec


def _verdicts(*args: str) -> tuple[int, int, str]:
    """Exit codes of `check` and `simulate` on the same input, and what check printed."""
    checked = CliRunner().invoke(main, ["check", *args])
    simulated = CliRunner().invoke(main, ["simulate", *args])
    return checked.exit_code, simulated.exit_code, checked.stderr + simulated.stdout


def _spec(
    tmp_path: Path, operator: dict[str, Any] | None = None, driver: dict[str, Any] | None = None
) -> str:
    doc = minimal_spec()
    doc["spec"]["gpuOperator"] = {"managed": True, "values": operator or {}}
    doc["spec"]["draDriver"]["values"] = driver or {}
    return str(write_spec(tmp_path / "lab.yaml", doc))


def test_model_nodes_carry_the_kubelets_well_known_labels(tmp_path: Path) -> None:
    (loaded,) = load_stack(Path(_spec(tmp_path)))
    for group in _cluster(plan_platform(loaded.platform)).groups:
        assert well_known_labels(group.nodes[0]).items() <= group.labels.items()
    assert well_known_labels("gpu-01")["kubernetes.io/os"] == "linux"


def test_a_kubelet_plugin_selecting_linux_nodes_runs_on_every_dra_pool(tmp_path: Path) -> None:
    selector = {"kubeletPlugin": {"nodeSelector": {"kubernetes.io/os": "linux"}}}
    checked, simulated, out = _verdicts(_spec(tmp_path, driver=selector))
    assert (checked, simulated) == (0, 0), out
    assert "GP240" not in out


def test_a_kubelet_plugin_selecting_another_os_still_fails_in_both(tmp_path: Path) -> None:
    selector = {"kubeletPlugin": {"nodeSelector": {"kubernetes.io/os": "windows"}}}
    checked, simulated, out = _verdicts(_spec(tmp_path, driver=selector))
    assert (checked, simulated) == (1, 1)
    assert "GP240" in out


def test_a_host_driver_is_no_violation(tmp_path: Path) -> None:
    checked, simulated, out = _verdicts(_spec(tmp_path, operator={"driver": {"enabled": False}}))
    assert (checked, simulated) == (0, 0), out
    assert "the NVIDIA driver is the host's" in out


@pytest.mark.parametrize("overlay", [{"nfd": {"enabled": False}}, {"driver": {"enabled": False}}])
def test_karpenter_replacements_with_external_nfd_or_a_host_driver_hold(
    tmp_path: Path, overlay: dict[str, Any]
) -> None:
    # GIVEN the mixed fleet (a Karpenter pool whose nodes are replaced, not relabelled)
    path = write_overlay(tmp_path / "overlay.yaml", {"gpuOperator": {"values": overlay}})
    stack = str(REPO / "stacks" / "mixed-fleet.yaml")
    checked, simulated, out = _verdicts(stack, "--overlay", str(path))
    # THEN the new nodes are labelled by the cluster's own NFD, and the host driver is loaded at boot
    assert (checked, simulated) == (0, 0), out
