"""`check --snapshot` on clusters no one here wrote (#38 item 4): a cluster that has not started
migrating is judged only where its tiers' pools are DRA, and a workload is counted once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from gpuplatform.cli import main
from gpuplatform.load.stacks import load_stack
from gpuplatform.testing import wave_cluster
from tests.conftest import REPO
from tests.simulate.helpers import sim_spec
from tests.specs import write_spec


def _run(*args: str) -> Result:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code != 70, result.stderr
    return result


def _errors(result: Result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("error:")]


def test_a_cluster_that_has_not_started_migrating_is_no_gp311(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the reproducer: the model's healthy baseline of the reference stack
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    import fleet_snapshot

    stack = str(REPO / "stacks" / "reference.py")
    folder = fleet_snapshot.write("baseline", tmp_path / "snap", Path(stack))
    # WHEN check judges the stack against it
    checked = _run("check", stack, "--platform", "reference", "--snapshot", str(folder))
    # THEN no tier is judged against slices its legacy pools do not publish (no GP311); what is left
    # is the cluster's unmigrated GPU pods, which no wave moves and the final cutover strands
    errors = _errors(checked)
    assert not [e for e in errors if "GP311" in e], errors
    assert errors and all("spec.waves[6]: GP2" in e and "gpu-legacy/legacy-" in e for e in errors), errors
    capacity = _run("capacity", stack, "--platform", "reference", "--snapshot", str(folder), "--all")
    assert "wave final-cutover: does not fit" in capacity.stdout and "gpu-legacy/legacy-" in capacity.stdout
    # AND without those pods, the cluster passes check
    pods = json.loads((folder / "pods.json").read_text())
    pods["items"] = [p for p in pods["items"] if p["metadata"]["namespace"] != "gpu-legacy"]
    (folder / "pods.json").write_text(json.dumps(pods))
    again = _run("check", stack, "--platform", "reference", "--snapshot", str(folder))
    assert again.exit_code == 0, again.stderr


def test_a_spec_workloads_pods_in_the_snapshot_are_counted_once(tmp_path: Path) -> None:
    # GIVEN a workload whose replicas use the tenant's whole device-plugin quota, and the cluster
    # the model builds for it (its pods owned by its ReplicaSet), running nothing else
    doc = sim_spec()
    doc["spec"]["tenants"][0]["quota"] = {"gpus": 4, "legacyWorkloads": False}
    doc["spec"]["workloads"] = [
        {"kind": "Deployment", "namespace": "team-a", "name": "train", "gpus": 2, "replicas": 2}
        | {"tier": "full", "movesIn": "cutover"}
    ]
    spec = write_spec(tmp_path / "lab.yaml", doc)
    (loaded,) = load_stack(spec)
    cluster = wave_cluster(loaded.platform, "pilot")
    cluster.kinds["pods"] = [p for p in cluster.list("pods") if p["metadata"]["namespace"] != "gpu-legacy"]
    folder = cluster.write(tmp_path / "snap")
    # WHEN the transitions are replayed with the snapshot's pods
    simulated = _run("simulate", str(spec), "--snapshot", str(folder), "--from", "pilot", "--to", "claims")
    checked = _run("check", str(spec), "--snapshot", str(folder))
    # THEN the snapshot's pods are the spec's workload, not a second one over its quota
    assert "exceeded" not in simulated.stdout and simulated.exit_code == 0, simulated.stdout
    assert not [e for e in _errors(checked) if "GP290" in e], checked.stderr
