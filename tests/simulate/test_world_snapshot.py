"""The simulated world is a cluster you can snapshot: the real gate programs judge it in the replay,
`evidence` judges its written snapshots the same way, and every clean checkpoint passes every gate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuplatform.cli import main
from gpuplatform.evidence.evaluate import evaluate_gates
from gpuplatform.gates import gates_for_wave
from gpuplatform.load.stacks import discover_stacks, load_stack, load_stacks
from gpuplatform.plan.waves import plan_platform
from gpuplatform.simulate import jobs
from gpuplatform.snapshot.read import load_snapshot
from tests.simulate.helpers import replay_judged, sim_spec, simulate, violations
from tests.specs import write_spec

ROOT = Path(__file__).resolve().parents[2]


STACKS = [*discover_stacks(ROOT / "stacks"), ROOT / "benchmarks" / "fleet.py"]


@pytest.mark.parametrize("stack", STACKS, ids=lambda path: path.stem)
def test_every_clean_checkpoint_passes_every_gate_program(
    stack: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN every platform of the stack (the benchmark fleet at a small size), with the validation
    # probes that hold their claim while the gate reads them (as in test_fleets)
    monkeypatch.setenv("FLEET_NODES", "24")
    monkeypatch.setattr(jobs, "holds_claim", lambda pod: True)
    for loaded in load_stacks([stack]):
        replay_judged(loaded)


def test_evidence_on_a_written_checkpoint_gives_the_replays_verdicts(tmp_path: Path) -> None:
    # GIVEN the checkpoints of one transition written by `simulate --write-snapshots`
    spec = write_spec(tmp_path / "lab.yaml", sim_spec())
    out = tmp_path / "checkpoints"
    runner = CliRunner()
    done = runner.invoke(
        main,
        [
            "simulate",
            str(spec),
            "--from",
            "base",
            "--to",
            "pilot",
            "--engine",
            "flux",
            "--write-snapshots",
            str(out),
        ],
    )
    assert done.exit_code == 0, done.output
    folders = sorted(out.iterdir())
    gates = [f for f in folders if "-base-to-pilot-" in f.name and "-gate-" in f.name]
    assert gates and all(f.name.endswith("-holds") for f in gates)
    settled = [f for f in folders if f.name.endswith("-flux-base-to-pilot-step00028-after-base-pilot")]
    assert len(settled) == 1
    # WHEN evidence judges the settled checkpoint of the pilot wave, as a user would
    checked = runner.invoke(
        main,
        [
            *("evidence", str(spec), "--wave", "pilot", "--snapshot", str(settled[0])),
            *("--format", "json"),
        ],
    )
    # THEN every gate holds, as in the replay
    assert checked.exit_code == 0, checked.output
    manifest = json.loads((settled[0] / "manifest.json").read_text())
    assert manifest["checkpoint"]["wave"] == "pilot"
    # what the model does not build is said missing; every kind a gate reads is there
    assert {"daemonsets", "replicasets"} <= set(manifest["missing"])
    assert not {"nodes", "pods", "resourceslices", "resourceclaims", "deviceclasses"} & set(
        manifest["missing"]
    )
    # and each gate checkpoint is judged held by its gate (the claim pilot's before its probe goes)
    (loaded,) = load_stack(spec)
    plan = plan_platform(loaded.platform)
    state = plan.wave("pilot")
    for folder in gates:
        gate_id = folder.name.split("-gate-")[1].removesuffix("-holds")
        (gate,) = [g for g in gates_for_wave(plan, state) if g.id == gate_id]
        assert evaluate_gates([gate], plan, state, load_snapshot(folder))[0].status == "held", folder.name


def test_write_snapshots_refuses_a_folder_that_holds_something(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "lab.yaml", sim_spec())
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "old").write_text("")
    done = CliRunner().invoke(main, ["simulate", str(spec), "--write-snapshots", str(tmp_path / "out")])
    assert done.exit_code == 2
    assert f"error: {tmp_path / 'out'}: --write-snapshots needs a new or empty folder" in done.stderr


def test_a_gate_job_without_its_facts_waits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN gate Jobs whose facts ConfigMap is not in the cluster
    monkeypatch.setattr(jobs, "_data", lambda world, obj: {})
    # WHEN a transition is replayed
    report = simulate(tmp_path, sim_spec(), "base", "pilot", ("flux",))
    # THEN the first gate waits for its facts and the sync does not complete
    (first, *_) = [v for *_, v in violations(report, late=False)]
    assert first.invariant == "sync-completes"
    assert "the facts ConfigMap of Job gate-rollback-safety-" in first.message
