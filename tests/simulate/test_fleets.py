"""Every transition `plan` accepts holds under both engines: the stacks, the benchmark fleet, a mixed fleet."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpuplatform.background import can_fork
from gpuplatform.cli import cli_runtime
from gpuplatform.load.stacks import LoadedPlatform, discover_stacks, load_stack, load_stacks
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.operator_handoff import operator_handoff_path
from gpuplatform.render.tree import render_tree
from gpuplatform.runtime import using
from gpuplatform.simulate import jobs
from gpuplatform.simulate.run import PlatformReport, prepare, replay_reports
from tests.forks import count_forks
from tests.simulate.helpers import simulate, violations
from tests.specs import write_spec

ROOT = Path(__file__).resolve().parents[2]
ENGINES = ("argocd", "flux")


def _not_the_gates_of_issue_10(report: PlatformReport) -> list[tuple[str, str, str, Any]]:
    """The failures, but for a failed pre-transition gate Flux never re-runs with the operator late:
    the gates issue (#10) makes the gate Jobs retry by themselves, as the switch Jobs do. When it
    lands this filter matches nothing and can go."""
    return [
        (r.engine, r.source, r.target, r.violation)
        for r in report.failed
        if r.violation is not None
        and not (r.late and r.engine == "flux" and "never re-runs" in r.violation.message)
    ]


@pytest.mark.parametrize(
    "loaded", load_stacks(discover_stacks(ROOT / "stacks")), ids=lambda lp: lp.platform.name
)
def test_every_transition_of_every_stack_holds(
    loaded: LoadedPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the rendered validation Job ends and frees its claim, so claim-pilot cannot hold; #10 renders
    # one that holds it while the gate reads it: modelled here as that one, to prove the rest
    monkeypatch.setattr(jobs, "holds_claim", lambda pod: True)
    report = prepare(loaded, None, None, ENGINES).replay()
    assert report.results
    assert _not_the_gates_of_issue_10(report) == []


def test_every_transition_of_the_benchmark_fleet_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLEET_NODES", "300")
    [loaded] = load_stack(ROOT / "benchmarks" / "fleet.py")
    report = prepare(loaded, None, None, ENGINES).replay()
    assert len(report.results) > 40
    assert _not_the_gates_of_issue_10(report) == []


MIXED: dict[str, Any] = {
    "apiVersion": "gpuplatform.dev/v1alpha1",
    "kind": "Platform",
    "metadata": {"name": "mixed"},
    "spec": {
        "domain": "mixed.example.com",
        "gpuOperator": {"managed": True},
        "draDriver": {"chartRepository": "oci://registry.example.com/charts"},
        "delivery": {"engines": ["argocd", "flux"], "repoUrl": "https://git.example.com/mixed.git"},
        "nodePools": [
            {"name": "static-a100", "nodes": ["a100-01", "a100-02"], "product": "A100-80GB"},
            {
                "name": "karp-h100",
                "provisioner": {"kind": "karpenter", "name": "gpu-h100"},
                "product": "H100-80GB",
                "migratesIn": "pilot",
            },
            {
                "name": "ng-l40s",
                "provisioner": {"kind": "node-group", "name": "l40s-group", "cloud": "eks"},
                "product": "L40S",
                "gpusPerNode": 4,
                "migratesIn": "scale",
            },
        ],
        "tiers": [{"name": "hopper", "architecture": "Hopper"}, {"name": "any-gpu", "deviceType": "gpu"}],
        "tenants": [
            {
                "name": "team-a",
                "tiers": ["hopper", "any-gpu"],
                "groups": ["team-a-ops"],
                "claimTemplates": [
                    {"name": "one-h100", "tier": "hopper"},
                    {"name": "two-any", "tier": "any-gpu", "count": 2},
                ],
            }
        ],
        "bridges": [{"name": "legacy-bridge"}],
        "waves": [
            {"name": "base", "stage": "baseline"},
            {"name": "pilot", "stage": "pilot-pool"},
            {
                "name": "claims",
                "stage": "native-claim-pilot",
                "tiers": ["hopper", "any-gpu"],
                "tenants": ["team-a"],
            },
            {"name": "bridge", "stage": "compatibility-bridge", "bridges": ["legacy-bridge"]},
            {"name": "scale", "stage": "scale"},
            {"name": "cutover", "stage": "final-cutover"},
        ],
        "activeWave": "pilot",
    },
}


def test_every_transition_of_a_mixed_fleet_holds(tmp_path: Path) -> None:
    report = simulate(tmp_path, MIXED)
    assert {r.engine for r in report.results} == set(ENGINES)
    assert any(r.late for r in report.results)
    assert violations(report) == []


def test_a_mixed_fleet_with_an_unmanaged_operator_holds_once_the_runbook_applies_the_handoff(
    tmp_path: Path,
) -> None:
    # GIVEN the GPU Operator managed outside gpuplatform: the first wave's runbook applies the hand-off
    doc = {**MIXED, "spec": {k: v for k, v in MIXED["spec"].items() if k != "gpuOperator"}}
    report = simulate(tmp_path, doc, "base", "pilot")
    # THEN every replay holds
    assert violations(report) == []
    assert not any("no hand-off" in n for r in report.results for n in r.notes)


def test_a_mixed_fleet_without_the_operator_handoff_loses_new_dra_nodes(tmp_path: Path) -> None:
    # GIVEN the GPU Operator managed outside gpuplatform, and the runbook's hand-off never applied
    doc = {**MIXED, "spec": {k: v for k, v in MIXED["spec"].items() if k != "gpuOperator"}}
    (loaded,) = load_stack(write_spec(tmp_path / "lab.yaml", doc))
    plan = plan_platform(loaded.platform)
    tree = render_tree(plan)
    path = operator_handoff_path(plan)
    assert path is not None and path in tree.files
    del tree.files[path]
    report = prepare(loaded, "base", "pilot", ENGINES, tree=tree).replay()
    # THEN NFD never labels the new tainted Karpenter node, so nothing of the GPU stack runs there,
    # and the allocator-exclusivity gate's program holds the sync on it: no kubelet plugin runs
    # without a driver (the operands program asks only for what the node's deploy labels schedule,
    # and the operator never labelled the node)
    found = violations(report, late=False)
    assert {v.invariant for *_, v in found} == {"sync-completes"}
    message = found[0][3].message
    assert (
        "gate-allocator-exclusivity" in message and "karp-h100-node-0-r runs no DRA kubelet plugin" in message
    )
    assert any("no hand-off" in n for r in report.results for n in r.notes)


def test_engines_replayed_in_forked_workers_report_what_one_process_reports(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN a stack replayed under both engines, once as the CLI runs it (one worker per engine)
    # and once as a library call does (in-process: it forks only when asked)
    loaded = load_stack(ROOT / "stacks" / "reference.py")[0]
    assert tuple(loaded.platform.delivery.engines) == ENGINES
    if not can_fork():
        pytest.skip("needs fork and two cores")
    forks = count_forks(monkeypatch)
    with using(cli_runtime()):
        forked = prepare(loaded, None, None, ENGINES).replay()
    workers = len(forks)
    alone = prepare(loaded, None, None, ENGINES).replay()
    # THEN the CLI's run forked a worker per engine, the library's none, and the reports are equal
    assert (workers, len(forks)) == (len(ENGINES), len(ENGINES))
    assert forked.as_dict() == alone.as_dict()
    assert [r.engine for r in forked.results] == sorted(r.engine for r in forked.results)


def test_platforms_replayed_by_one_worker_each_report_what_each_reports_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN a stack of two platforms, each rendering both engines
    loaded = load_stack(ROOT / "stacks" / "reference.py")
    assert len(loaded) == 2 and all(tuple(lp.platform.delivery.engines) == ENGINES for lp in loaded)
    if not can_fork():
        pytest.skip("needs fork and two cores")
    forks = count_forks(monkeypatch)
    # WHEN the CLI's runtime replays them together
    with using(cli_runtime()):
        together = replay_reports([prepare(lp, None, None, ENGINES) for lp in loaded])
    # THEN one worker per platform ran both its engines in turn, and each report is the one the
    # platform gets replayed alone, in one process, its results in engine order
    assert len(forks) == len(loaded)
    for lp, report in zip(loaded, together, strict=True):
        alone = prepare(lp, None, None, ENGINES).replay()
        assert report.as_dict() == alone.as_dict()
        assert [r.engine for r in report.results] == sorted(r.engine for r in report.results)
