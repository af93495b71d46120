"""Runbooks: one per wave, every kind of wave, real names, the rollback in the safe order."""

from __future__ import annotations

import re

import pytest
from syrupy.assertion import SnapshotAssertion

from gpuplatform.load.stacks import load_stack
from gpuplatform.model import Platform
from gpuplatform.plan.transitions import transition
from gpuplatform.plan.waves import Plan, plan_platform
from gpuplatform.render.runbooks import render_runbooks
from tests.conftest import REPO


@pytest.fixture(scope="module")
def mixed() -> Plan:
    (loaded,) = load_stack(REPO / "stacks" / "mixed-fleet.yaml")
    return plan_platform(loaded.platform)


def _section(text: str, start: str, end: str | None = None) -> str:
    part = text.split(start, 1)[1]
    return part.split(end, 1)[0] if end else part


def _in_order(text: str, *needles: str) -> None:
    positions = [text.index(n) for n in needles]
    assert positions == sorted(positions), needles


@pytest.mark.parametrize(
    "wave", ["00-baseline.md", "01-pilot-pool.md", "03-native-claim-pilot.md", "06-final-cutover.md"]
)
def test_runbook_snapshot(reference: Platform, wave: str, text_snapshot: SnapshotAssertion) -> None:
    assert render_runbooks(plan_platform(reference))[wave] == text_snapshot


@pytest.mark.parametrize("wave", ["04-apps.md", "05-nim.md", "06-scale.md", "07-drain.md", "08-cutover.md"])
def test_mixed_fleet_runbook_snapshot(mixed: Plan, wave: str, text_snapshot: SnapshotAssertion) -> None:
    assert render_runbooks(mixed)[wave] == text_snapshot


def test_every_change_of_the_plan_is_in_the_runbook(mixed: Plan) -> None:
    books = render_runbooks(mixed)
    for prev, state in zip(mixed.waves, mixed.waves[1:], strict=False):
        text = books[f"{state.dir_name}.md"]
        forward = _section(text, "### What changes", "### Gates")
        back = _section(text, "## Rollback", "### Gates")
        for change in transition(mixed, prev.name, state.name).changes:
            assert change.split(" ", 1)[-1] in forward, (state.name, change)
        for change in transition(mixed, state.name, prev.name).changes:
            assert change.split(" ", 1)[-1] in back, (state.name, change)


def test_static_pool_move_taints_and_drains_before_the_sync_and_checks_after(reference: Platform) -> None:
    text = render_runbooks(plan_platform(reference))["01-pilot-pool.md"]
    before = _section(text, "### Before the sync", "### Sync")
    after = _section(text, "### After the sync", "## Evidence")
    assert "kubectl taint nodes gpu-dra-01 gpu-scheduling.platform.example.com/mode=dra:NoSchedule" in before
    assert "kubectl drain gpu-dra-01 --ignore-daemonsets" in before
    assert "nvidia.com/dra-kubelet-plugin" in after and "kubectl get resourceslices" in after
    assert "kubectl uncordon gpu-dra-01" in after


def test_rollback_releases_claims_before_the_sync_then_labels_taint_uncordon(reference: Platform) -> None:
    text = _section(render_runbooks(plan_platform(reference))["01-pilot-pool.md"], "## Rollback")
    _in_order(
        text,
        "kubectl cordon gpu-dra-01",
        "kubectl get resourceclaims -A",
        "### Sync",
        "Set `activeWave: baseline`",
        "### After the sync",
        "The sync removes `nvidia.com/dra-kubelet-plugin`",
        "kubectl taint nodes gpu-dra-01 gpu-scheduling.platform.example.com/mode=dra:NoSchedule-",
        "kubectl uncordon gpu-dra-01",
        "The DRA driver is uninstalled",
    )


def test_claim_pilot_runbook_checks_runtime_identity(reference: Platform) -> None:
    text = render_runbooks(plan_platform(reference))["03-native-claim-pilot.md"]
    assert "kubectl -n gpu-dra-pilot logs job/gpu-dra-validation" in text
    assert "UUID" in text


def test_nim_runbook_is_blue_green_with_its_rollback(mixed: Plan) -> None:
    text = render_runbooks(mixed)["05-nim.md"]
    forward = _section(text, "### After the sync", "## Evidence")
    _in_order(
        forward,
        "Apply: create NIMService `serving/llm-dra`",
        "kubectl -n serving wait nimservice/llm-dra --for=jsonpath='{.status.state}'=Ready",
        "Switch traffic: point the routes and clients of Service `llm` at Service `llm-dra`",
        "Retire `llm` only once this wave is proven",
        "kubectl -n serving delete nimservice llm",
    )
    back = _section(text, "## Rollback", "### Sync")
    _in_order(back, "Switch traffic back to `llm`", "kubectl -n serving delete nimservice llm-dra")


def test_workload_owner_acts_after_the_sync_forward_and_before_it_back(mixed: Plan) -> None:
    text = render_runbooks(mixed)["04-apps.md"]
    forward = _section(text, "### After the sync", "## Evidence")
    assert "handoff/04-apps/workloadhandoff_research_deployment-notebook.yaml" in forward
    assert "template `notebook-gpu`" in forward
    assert "kubectl -n research rollout status deployment/notebook" in forward
    back = _section(text, "## Rollback", "### Sync")
    assert "goes back to `nvidia.com/gpu` before the sync prunes its claim template" in back


def test_drain_runbook_says_what_to_drain_and_how_to_check(mixed: Plan) -> None:
    text = render_runbooks(mixed)["07-drain.md"]
    assert "drain pool(s) a100: wave cutover moves them between allocators" in text
    after = _section(text, "### After the sync", "## Evidence")
    assert "kubectl drain a100-01 a100-02 a100-03 --ignore-daemonsets" in after
    assert 'select(any(.spec.containers[]; (.resources.limits["nvidia.com/gpu"] // "0") != "0"))' in after
    assert "for n in a100-01 a100-02 a100-03; do" in after
    # the wave that moves the pool only checks the drain instead of draining again
    cutover = _section(render_runbooks(mixed)["08-cutover.md"], "### Before the sync", "### Sync")
    assert "Pool `a100` was drained in wave `drain`; check it still is" in cutover


def test_provisioner_pool_is_patched_and_replaced_and_only_selected_by_label(mixed: Plan) -> None:
    text = render_runbooks(mixed)["06-scale.md"]
    assert "handoff/06-scale/nodepool_gpu-l40s.yaml" in text
    assert "kubectl get nodepool gpu-l40s -o json | jq" in text and "| kubectl replace -f -" in text
    assert "kubectl get nodeclaims -l karpenter.sh/nodepool=gpu-l40s" in text
    assert "kubectl get nodes -l karpenter.sh/nodepool=gpu-l40s" in text
    # never a pool name (or a provisioner name) where a node name belongs
    for name in ("l40s", "gpu-l40s"):
        assert not re.search(rf"kubectl (?:get |taint |cordon |drain |uncordon )?nodes? {name}\b", text)
        assert f"for n in {name};" not in text


def test_the_rollback_of_a_karpenter_move_reverts_the_template(mixed: Plan) -> None:
    back = _section(render_runbooks(mixed)["06-scale.md"], "## Rollback")
    _in_order(
        back,
        "kubectl get resourceclaims -A",
        "### Sync",
        "must carry `gpu-scheduling.fleet.example.com/mode=legacy`",
    )
    assert 'del(.spec.template.metadata.labels["nvidia.com/dra-kubelet-plugin"]' in back


def test_a_wave_that_changes_nothing_says_it_is_a_stop(reference: Platform) -> None:
    books = render_runbooks(plan_platform(reference))
    assert "Nothing in the cluster: this wave is a stop" in books["05-application.md"]
