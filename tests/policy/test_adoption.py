"""Brownfield adoption rules GP250-GP255: every rule with a spec or snapshot that fires it and one that does not."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from gpuplatform.adopt.running import RunningRelease
from gpuplatform.errors import Problem
from gpuplatform.load.stacks import load_stack
from gpuplatform.policy.rules import run_rules
from gpuplatform.snapshot.read import load_snapshot
from tests.adopt.helm_storage import write_captured
from tests.specs import minimal_spec, write_spec


def _managed(**operator: Any) -> dict[str, Any]:
    doc = minimal_spec()
    doc["spec"]["gpuOperator"] = {"managed": True, **operator}
    return doc


def _run(tmp_path: Path, doc: dict[str, Any], *running: RunningRelease) -> list[Problem]:
    """The rules over `doc`; with `running`, against a snapshot that captured those releases."""
    (loaded,) = load_stack(write_spec(tmp_path / "lab.yaml", doc))
    if not running:
        return run_rules(loaded)
    folder = tmp_path / "snapshot"
    shutil.rmtree(folder, ignore_errors=True)
    for r in running:
        write_captured(folder, r.name, r.namespace, r.values, r.chart_version)
    return run_rules(loaded, snapshot=load_snapshot(folder))


def _found(problems: list[Problem], code: str) -> list[tuple[str, str]]:
    return [(p.loc, p.message) for p in problems if p.code == code]


def _release(
    values: dict[str, Any], *, name: str = "gpu-operator", ns: str = "gpu-operator", chart: str = "v26.3.1"
) -> RunningRelease:
    return RunningRelease(name, ns, "gpu-operator", chart, 4, "deployed", values)


def test_gp250_a_driver_version_change_against_the_running_release(tmp_path: Path) -> None:
    running = _release({"driver": {"version": "580.95.05"}})
    [(loc, message)] = _found(_run(tmp_path, _managed(driverVersion="580.126.09"), running), "GP250")
    assert loc == "spec.gpuOperator.driverVersion" and "from 580.95.05" in message
    assert not _found(_run(tmp_path, _managed(driverVersion="580.95.05"), running), "GP250")


def test_gp250_the_running_chart_default_counts_when_the_release_set_none(tmp_path: Path) -> None:
    # v26.3.1's chart default is 580.126.20
    [(_, message)] = _found(_run(tmp_path, _managed(driverVersion="580.126.09"), _release({})), "GP250")
    assert "580.126.20" in message and "default of chart gpu-operator v26.3.1" in message
    assert not _found(_run(tmp_path, _managed(driverVersion="580.126.20"), _release({})), "GP250")


def test_gp250_without_a_snapshot_reads_the_team_values(tmp_path: Path) -> None:
    doc = _managed(driverVersion="580.126.09", values={"driver": {"version": "580.95.05"}})
    assert _found(_run(tmp_path, doc), "GP250") == [
        (
            "spec.gpuOperator.values.driver.version",
            "values set driver.version 580.95.05, which driverVersion 580.126.09 overrides",
        )
    ]
    doc = _managed(driverVersion="580.126.09", values={"driver": {"version": "580.95.05", "enabled": False}})
    assert not _found(_run(tmp_path, doc), "GP250")


def test_gp251_running_values_the_spec_does_not_carry(tmp_path: Path) -> None:
    running = _release(
        {
            "mig": {"strategy": "mixed"},
            "toolkit": {"env": [{"name": "CONTAINERD_SOCKET", "value": "/run/k3s/containerd.sock"}]},
            "devicePlugin": {"enabled": True},
        }
    )
    found = _found(_run(tmp_path, _managed(), running), "GP251")
    assert [loc for loc, _ in found] == [
        "spec.gpuOperator.values.mig.strategy",
        "spec.gpuOperator.values.toolkit.env",
    ]
    # imported: nothing is lost (devicePlugin.enabled is the migration's to set)
    imported = _managed(values={k: v for k, v in running.values.items() if k != "devicePlugin"})
    assert not _found(_run(tmp_path, imported, running), "GP251")
    # a changed item of a list counts
    changed = _managed(
        values={
            "mig": {"strategy": "mixed"},
            "toolkit": {"env": [{"name": "CONTAINERD_SOCKET", "value": "/x"}]},
        }
    )
    assert [loc for loc, _ in _found(_run(tmp_path, changed, running), "GP251")] == [
        "spec.gpuOperator.values.toolkit.env"
    ]


def test_gp252_values_the_chart_does_not_read(tmp_path: Path) -> None:
    doc = _managed(values={"operator": {"defaultRuntime": "containerd"}, "mig": {"strategy": "single"}})
    doc["spec"]["draDriver"]["values"] = {"kubeletPlugin": {"nodeselector": {"nvidia.com/x": "true"}}}
    assert [loc for loc, _ in _found(_run(tmp_path, doc), "GP252")] == [
        'spec.draDriver.values.kubeletPlugin.nodeselector["nvidia.com/x"]',
        "spec.gpuOperator.values.operator.defaultRuntime",
    ]
    assert not _found(_run(tmp_path, _managed(values={"mig": {"strategy": "single"}})), "GP252")


def test_gp253_a_second_operator_next_to_the_running_one(tmp_path: Path) -> None:
    elsewhere = _release({}, name="nvidia-gpu-operator", ns="gpu-system")
    [(loc, message)] = _found(_run(tmp_path, _managed(), elsewhere), "GP253")
    assert loc == "spec.gpuOperator.releaseName" and "gpu-system/nvidia-gpu-operator" in message
    same = _managed(namespace="gpu-system", releaseName="nvidia-gpu-operator")
    assert not _found(_run(tmp_path, same, elsewhere), "GP253")


def test_gp254_a_chart_version_without_facts(tmp_path: Path) -> None:
    assert _found(_run(tmp_path, _managed(version="26.3.3")), "GP254") == [
        ("spec.gpuOperator.version", "no chart facts for gpu-operator 26.3.3: using those of v26.3.1")
    ]
    assert not _found(_run(tmp_path, _managed()), "GP254")


def test_gp255_a_driver_manager_older_than_the_eviction_label(tmp_path: Path) -> None:
    old = _managed(values={"driver": {"manager": {"version": "v0.6.2"}}})
    assert [loc for loc, _ in _found(_run(tmp_path, old), "GP255")] == [
        "spec.gpuOperator.values.driver.manager.version"
    ]
    assert not _found(
        _run(tmp_path, _managed(values={"driver": {"manager": {"version": "v0.10.0"}}})), "GP255"
    )
    assert not _found(_run(tmp_path, _managed()), "GP255")


def test_check_with_a_snapshot_reads_the_captured_release(tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from gpuplatform.cli import main
    from tests.adopt.helm_storage import write_captured

    spec = write_spec(tmp_path / "lab.yaml", _managed())
    snap = tmp_path / "snap"
    snap.mkdir()
    nodes = {"items": [{"metadata": {"name": n}} for n in ("gpu-01", "gpu-02")]}
    (snap / "nodes.json").write_text(json.dumps(nodes))
    write_captured(snap, "gpu-operator", "gpu-operator", {"mig": {"strategy": "mixed"}})
    result = CliRunner().invoke(main, ["check", str(spec), "--snapshot", str(snap)])
    assert "GP251 the release would drop mig.strategy of gpu-operator/gpu-operator" in result.stderr
