"""`gpuplatform evidence`: verdicts from a snapshot, an honest report, and the proof a gate Job recorded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gpuplatform.cli import main
from gpuplatform.evidence.evaluate import evaluate_wave
from gpuplatform.evidence.report import evidence_markdown
from gpuplatform.model import Platform
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.gate_jobs import gate_job_names
from gpuplatform.snapshot.read import load_snapshot
from gpuplatform.testing import Cluster, claim, device_plugin_pod, pod, wave_cluster
from tests.conftest import REPO
from tests.specs import healthy_cluster, reference_platform

STACK = str(REPO / "stacks" / "reference.py")


def _results(platform: Platform, cluster: Cluster, folder: Path, wave: str) -> dict[str, Any]:
    plan = plan_platform(platform)
    return {r.id: r for r in evaluate_wave(plan, plan.wave(wave), load_snapshot(cluster.write(folder)))}


@pytest.mark.parametrize("wave", [s.name for s in plan_platform(reference_platform()).waves])
def test_a_healthy_reference_cluster_holds_every_gate(tmp_path: Path, wave: str) -> None:
    platform = reference_platform()
    results = _results(platform, wave_cluster(platform, wave), tmp_path, wave)
    assert {k: r.status for k, r in results.items() if r.status != "held"} == {}
    assert all(r.proof for r in results.values())


def _validation(cluster: Cluster) -> dict[str, Any]:
    return next(p for p in cluster.list("pods") if p["metadata"]["labels"].get("gpuplatform.dev/validation"))


def _after_the_gate(platform: Platform, wave: str, log: str) -> Cluster:
    """The snapshot an operator takes after the claim-pilot gate removed its pod: only the Job's log."""
    cluster = wave_cluster(platform, wave)
    v = _validation(cluster)
    cluster.kinds["pods"] = [p for p in cluster.list("pods") if p is not v]
    cluster.kinds["resourceclaims"] = [
        c for c in cluster.list("resourceclaims") if c["metadata"]["namespace"] != "gpu-dra-pilot"
    ]
    cluster.logs.clear()
    plan = plan_platform(platform)
    job = gate_job_names(plan, plan.wave(wave))["claim-pilot"]
    gate_pod = pod(f"{job}-xyz12", "gpuplatform-gates", "cpu-01", labels={"job-name": job}, phase="Succeeded")
    cluster.list("pods").append(gate_pod)
    cluster.logs[f"gpuplatform-gates/{job}-xyz12"] = log
    return cluster


def test_a_snapshot_taken_after_the_gate_reads_its_recorded_proof(tmp_path: Path) -> None:
    platform = reference_platform()
    log = (
        "proof: claim gpu-dra-pilot/v-gpu-1 holds gpu-dra-01/gpu-0 (uuid GPU-1), seen by the container\n"
        "proof: claim gpu-dra-pilot/v-gpu-1 released after its pod was removed\n"
        "gate claim-pilot holds\n"
    )
    result = _results(
        platform, _after_the_gate(platform, "native-claim-pilot", log), tmp_path / "a", "native-claim-pilot"
    )
    assert result["claim-pilot"].status == "held"
    assert (
        result["claim-pilot"].proof[1].startswith("recorded by gate Job gpuplatform-gates/gate-claim-pilot-")
    )
    assert result["cleanup"].status == "held"
    # a gate Job that never said `holds` proves nothing
    unproven = _after_the_gate(platform, "native-claim-pilot", "unknown: no pod of the validation Job yet\n")
    result = _results(platform, unproven, tmp_path / "b", "native-claim-pilot")
    assert result["claim-pilot"].status == "unknown"


def test_uuids_come_from_the_log_or_the_nvidia_smi_csv(tmp_path: Path) -> None:
    platform = reference_platform()
    cluster = wave_cluster(platform, "native-claim-pilot")
    v = _validation(cluster)
    key = f"{v['metadata']['namespace']}/{v['metadata']['name']}"
    uuid = cluster.logs.pop(key).split("(UUID: ")[1].rstrip(")\n")
    assert (
        _results(platform, cluster, tmp_path / "none", "native-claim-pilot")["claim-pilot"].status
        == "unknown"
    )
    cluster.nvidia_smi[key] = f"name, memory.total [MiB], uuid\nNVIDIA H100 80GB HBM3, 81559 MiB, {uuid}\n"
    assert _results(platform, cluster, tmp_path / "csv", "native-claim-pilot")["claim-pilot"].status == "held"
    cluster.nvidia_smi[key] = "name, memory.total [MiB], uuid\nNVIDIA H100 80GB HBM3, 81559 MiB, GPU-other\n"
    assert (
        _results(platform, cluster, tmp_path / "bad", "native-claim-pilot")["claim-pilot"].status == "broken"
    )


@pytest.mark.parametrize(
    ("change", "check", "finding"),
    [
        (
            lambda c: c.list("resourceclaims").append(
                claim("stale", "ml", "gpu-dra-01", reserved_uid="gone")
            ),
            "cleanup",
            "is reserved for pod pod-of-stale, which no longer exists",
        ),
        (
            lambda c: (
                c.list("pods").append(pod("done", "ml", "gpu-dra-01", phase="Succeeded", uid="u-done")),
                c.list("resourceclaims").append(
                    claim("kept", "ml", "gpu-dra-01", owner={"name": "done", "uid": "u-done"})
                ),
            ),
            "cleanup",
            "claim ml/kept of finished pod done is still allocated",
        ),
        (
            lambda c: c.list("resourceclaims").append(claim("old", "ml", "gpu-legacy-01")),
            "claim-placement",
            "claim ml/old is allocated on gpu-legacy-01, not a DRA node of this wave",
        ),
        (
            lambda c: c.kinds.__setitem__("nodes", c.list("nodes")[1:]),
            "spec-nodes-exist",
            "node gpu-legacy-01 of pool legacy is not in the cluster",
        ),
    ],
)
def test_evidence_only_checks_break(tmp_path: Path, change: Any, check: str, finding: str) -> None:
    platform = reference_platform()
    cluster = wave_cluster(platform, "native-claim-pilot")
    change(cluster)
    result = _results(platform, cluster, tmp_path, "native-claim-pilot")[check]
    assert result.status == "broken"
    assert any(finding in f for f in result.findings), result.findings


def test_the_report_keeps_findings_unknowns_and_proof_apart(tmp_path: Path) -> None:
    platform = reference_platform()
    cluster = wave_cluster(platform, "native-claim-pilot")
    cluster.list("pods").append(device_plugin_pod("gpu-dra-01"))
    cluster.kinds["resourceclaims"] = None
    folder = cluster.write(tmp_path)
    plan = plan_platform(platform)
    results = evaluate_wave(plan, plan.wave("native-claim-pilot"), load_snapshot(folder))
    text = evidence_markdown("reference", "native-claim-pilot", load_snapshot(folder), results)
    section = text.split("## allocator-exclusivity: BROKEN")[1].split("\n## ")[0]
    findings, holds = section.split("What holds:")
    assert "Findings:" in findings and "TWO ALLOCATORS" in findings and "proof" not in findings
    assert "legacy node gpu-legacy-01" in holds
    unknown = text.split("## rollback-safety: unknown (counts as not held)")[1].split("\n## ")[0]
    assert "Could not be judged:" in unknown and "resourceclaims could not be read" in unknown
    assert "Nothing was checked" not in text
    [missing] = [line for line in text.splitlines() if line.startswith("Missing from the snapshot: ")]
    assert "resourceclaims" in missing.removesuffix(".").split(": ", 1)[1].split(", ")


def test_nothing_was_checked_only_when_nothing_was(tmp_path: Path) -> None:
    from gpuplatform.evidence.report import _section
    from gpuplatform.evidence.verdict import GateResult

    assert _section(GateResult("x", "t")) == [
        "Nothing was checked: the wave gives this gate no object to judge."
    ]
    assert _section(GateResult("x", "t", proof=["p"])) == ["Proof:", "", "- p"]


def test_cli_exit_codes_and_formats(tmp_path: Path) -> None:
    healthy = healthy_cluster().write(tmp_path / "ok")
    runner = CliRunner()
    base = ["evidence", STACK, "--platform", "reference", "--wave"]
    result = runner.invoke(main, [*base, "native-claim-pilot", "--snapshot", str(healthy)])
    assert result.exit_code == 0, result.output
    assert "All gates hold." in result.stdout
    assert "| `allocator-exclusivity` | held |" in result.stdout
    broken = healthy_cluster()
    broken.list("pods").append(device_plugin_pod("gpu-dra-01"))
    result = runner.invoke(
        main,
        [*base, "native-claim-pilot", "--snapshot", str(broken.write(tmp_path / "bad")), "--format", "json"],
    )
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["held"] is False
    [gate] = [g for g in report["gates"] if g["id"] == "allocator-exclusivity"]
    assert gate["status"] == "broken" and gate["findings"] and gate["unknown"] == [] and gate["proof"]
    assert runner.invoke(main, [*base, "nope", "--snapshot", str(healthy)]).exit_code == 2
    assert runner.invoke(main, [*base, "baseline", "--snapshot", str(tmp_path / "none")]).exit_code == 2
    ambiguous = runner.invoke(main, ["evidence", STACK, "--wave", "baseline", "--snapshot", str(healthy)])
    assert ambiguous.exit_code == 2 and "choose one" in ambiguous.stderr
