"""Gate programs ship once per platform; each wave's gate Job carries only its facts."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from gpuplatform.commands.synth import render_files
from gpuplatform.commands.wave_diff import diff_waves
from gpuplatform.gates import GATES, gate_data, gate_script, gates_for_wave
from gpuplatform.labels import GATE_LABEL
from gpuplatform.load.stacks import LoadedPlatform, load_stack
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.gate_facts import wave_data
from gpuplatform.render.gate_jobs import (
    FACTS_FILE,
    FACTS_PATH,
    GATE_PROGRAMS,
    PROGRAMS_PATH,
    render_gate_jobs,
)
from gpuplatform.render.validation import validation_jobs
from gpuplatform.testing import wave_cluster
from tests.conftest import REPO
from tests.gates.harness import fleet_doc, in_cluster, load_platform

STACKS = ["reference.py", "mixed-fleet.yaml", "nim-lab.yaml"]


@pytest.fixture(scope="module", params=STACKS)
def loaded(request: pytest.FixtureRequest) -> LoadedPlatform:
    return load_stack(REPO / "stacks" / str(request.param))[0]


def _program_lines() -> set[str]:
    """Every distinctive line of every gate's script (short lines such as `fi` are everywhere)."""
    return {
        line.strip() for gate in GATES for line in gate_script(gate).splitlines() if len(line.strip()) >= 30
    }


def test_the_programs_ship_once_in_the_delivery_folder(loaded: LoadedPlatform) -> None:
    files = render_files(loaded)
    [path] = [p for p in files if p.startswith("delivery/gates/") and GATE_PROGRAMS in p]
    text = files[path].decode()
    assert all(line in text for line in _program_lines())
    assert not any(GATE_PROGRAMS in p for p in files if p.startswith("waves/") and p.endswith(".yaml"))


def test_every_gate_job_mounts_its_program_and_its_own_facts(loaded: LoadedPlatform) -> None:
    plan = plan_platform(loaded.platform)
    for state in plan.waves:
        objects = render_gate_jobs(plan, state)
        facts = wave_data(plan, state, validation_jobs(plan, state).data)
        config_maps = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ConfigMap"}
        jobs = [o for o in objects if o["kind"] == "Job" and GATE_LABEL in o["metadata"]["labels"]]
        assert [j["metadata"]["labels"][GATE_LABEL] for j in jobs] == [
            g.id for g in gates_for_wave(plan, state)
        ]
        for job, gate in zip(jobs, gates_for_wave(plan, state), strict=True):
            pod = job["spec"]["template"]["spec"]
            assert pod["containers"][0]["command"] == ["sh", f"{PROGRAMS_PATH}/{gate.id}.sh"]
            volumes = {v["name"]: v for v in pod["volumes"]}
            assert volumes["programs"]["configMap"] == {"name": GATE_PROGRAMS}
            assert volumes["facts"]["configMap"] == {"name": job["metadata"]["name"]}
            env = {e["name"]: e["value"] for e in pod["containers"][0]["env"]}
            assert env["DATA_FILE"] == f"{FACTS_PATH}/{FACTS_FILE}"
            shipped = config_maps[job["metadata"]["name"]]["data"][FACTS_FILE]
            assert json.loads(shipped) == gate_data(gate, facts)
            assert "jq" not in json.dumps(job)


def test_no_program_line_is_in_any_wave_diff(loaded: LoadedPlatform) -> None:
    files = render_files(loaded)
    plan = plan_platform(loaded.platform)
    program = _program_lines()
    for a, b in itertools.pairwise(plan.waves):
        for text in (diff_waves(files, "p", a, b).unified(), diff_waves(files, "p", b, a).unified()):
            changed = {line[1:].strip() for line in text.splitlines() if line[:1] in "+-"}
            assert not changed & program, (a.name, b.name)


def test_the_reference_bridge_wave_diff_is_short() -> None:
    """Issue 29's measure: native-claim-pilot -> compatibility-bridge of the reference platform."""
    loaded = load_stack(REPO / "stacks" / "reference.py")[0]
    plan = plan_platform(loaded.platform)
    text = diff_waves(
        render_files(loaded), "reference", plan.wave("native-claim-pilot"), plan.wave("compatibility-bridge")
    ).unified()
    # 400 until the DRA side's probe tolerated nvidia.com/gpu too (#38 item 8: +3 lines in its Job)
    assert len(text.splitlines()) < 410


def test_facts_larger_than_an_argument_reach_the_program(tmp_path: Path) -> None:
    """An argument or environment string is limited to 128 KiB (Linux MAX_ARG_STRLEN): the script
    reads the facts with --slurpfile, so a static pool of 11,000 listed nodes is judged, not refused."""
    doc = fleet_doc()
    doc["spec"]["nodePools"][0]["nodes"] = [f"gpu-a100-node-{i:05d}" for i in range(11_000)]
    platform = load_platform(tmp_path, doc)
    run = in_cluster(
        platform, "claims", "allocator-exclusivity", wave_cluster(platform, "claims"), tmp_path / "c"
    )
    assert (tmp_path / "c" / FACTS_FILE).stat().st_size > 128 * 1024
    assert run.returncode == 0, run.stderr[-2000:]
    assert "legacy node gpu-a100-node-10999: no DRA kubelet plugin" in run.stdout
