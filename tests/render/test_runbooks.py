"""Runbooks: one per wave, every kind of wave, real names, the rollback in the safe order."""

from __future__ import annotations

import itertools
import re
import shlex
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from gpuplatform.cli import main
from gpuplatform.commands.diff import reviewed_transitions
from gpuplatform.commands.synth import render_files
from gpuplatform.load.stacks import load_stack
from gpuplatform.plan.steps import Step
from gpuplatform.plan.sync_order import SYNC_UNITS
from gpuplatform.plan.transitions import transition
from gpuplatform.plan.waves import Plan, plan_platform
from gpuplatform.render.runbook_pools import GPU_PODS
from tests.conftest import REPO


@pytest.fixture(scope="module")
def mixed() -> Plan:
    (loaded,) = load_stack(REPO / "stacks" / "mixed-fleet.yaml")
    return plan_platform(loaded.platform)


def _books(stack: str) -> dict[str, str]:
    """The runbooks as synth writes them (their sync steps cut to what the rendered files change)."""
    loaded = load_stack(REPO / "stacks" / stack)[0]
    files = render_files(loaded)
    return {p.removeprefix("runbooks/"): files[p].decode() for p in files if p.startswith("runbooks/")}


@pytest.fixture(scope="module")
def mixed_books() -> dict[str, str]:
    return _books("mixed-fleet.yaml")


@pytest.fixture(scope="module")
def reference_books() -> dict[str, str]:
    return _books("reference.py")


def _section(text: str, start: str, end: str | None = None) -> str:
    part = text.split(start, 1)[1]
    return part.split(end, 1)[0] if end else part


def _in_order(text: str, *needles: str) -> None:
    positions = [text.index(n) for n in needles]
    assert positions == sorted(positions), needles


def test_every_change_of_the_plan_is_in_the_runbook(mixed_books: dict[str, str], mixed: Plan) -> None:
    books = mixed_books
    for prev, state in zip(mixed.waves, mixed.waves[1:], strict=False):
        text = books[f"{state.dir_name}.md"]
        forward = _section(text, "### What changes", "### Gates")
        back = _section(text, "## Rollback", "### Gates")
        for change in transition(mixed, prev.name, state.name).changes:
            assert change.split(" ", 1)[-1] in forward, (state.name, change)
        for change in transition(mixed, state.name, prev.name).changes:
            assert change.split(" ", 1)[-1] in back, (state.name, change)


def _runbook_lines(step: Step, target: str) -> str:
    """How the runbook writes one step of the plan's sequence."""
    if step.kind == "merge":
        return f"Set `activeWave: {target}`"
    if step.kind == "sync":
        return f"`{step.action}` (`{step.layer}`): {step.what}."
    when = f" (once `{step.after}` has applied; do not wait for the rest of the sync)" if step.after else ""
    return step.what[:1].upper() + step.what[1:] + when + "."


@pytest.mark.parametrize("stack", ["mixed-fleet.yaml", "reference.py", "nim-lab.yaml"])
def test_plan_and_runbook_tell_the_same_steps_in_the_same_order(stack: str) -> None:
    # GIVEN a stack's runbooks as synth writes them, and `plan --from/--to` of every transition
    loaded = load_stack(REPO / "stacks" / stack)[0]
    files = render_files(loaded)
    plan = plan_platform(loaded.platform)
    for prev, state in itertools.pairwise(plan.waves):
        text = files[f"runbooks/{state.dir_name}.md"].decode()
        for a, b, section in (
            (prev, state, _section(text, "## From", "## Evidence")),
            (state, prev, _section(text, "## Rollback")),
        ):
            (t,) = reviewed_transitions([loaded], a.name, b.name)
            # THEN the runbook walks the plan's steps in its order; a manual step that waits for one
            # sync unit (`after`) comes right after that unit; no other sync unit is in the runbook
            units = {s.action for s in t.steps if s.kind == "sync"}
            expected: list[Step] = []
            for step in t.steps:
                if step.kind == "sync":
                    expected += [step, *(m for m in t.steps if m.kind == "manual" and m.after == step.action)]
                elif step.after not in units:
                    expected.append(step)
            _in_order(section, *(_runbook_lines(s, b.name) for s in expected))
            for unit in SYNC_UNITS:
                assert (f"`{unit.id}` (`{unit.folder}`)" in section) == (unit.id in units), (
                    a.name,
                    b.name,
                    unit.id,
                )


def test_static_pool_move_taints_and_drains_before_the_merge_and_checks_after(
    reference_books: dict[str, str],
) -> None:
    text = reference_books["01-pilot-pool.md"]
    before = _section(text, "### Before the merge", "### Sync")
    sync = _section(text, "### Sync", "### After the sync")
    after = _section(text, "### After the sync", "## Evidence")
    assert "kubectl taint nodes gpu-dra-01 gpu-scheduling.platform.example.com/mode=dra:NoSchedule" in before
    _in_order(before, "kubectl cordon gpu-dra-01", "kubectl drain gpu-dra-01 --ignore-daemonsets")
    # uncordoned while the sync runs, once the enable Job has run: the post gates place probes there
    _in_order(sync, "`enable` (`15-allocator-switch/enable`)", "kubectl uncordon gpu-dra-01", "`gates-post`")
    assert "nvidia.com/dra-kubelet-plugin" in after and "kubectl get resourceslices" in after


def test_rollback_releases_claims_before_the_sync_then_labels_taint_uncordon(
    reference_books: dict[str, str],
) -> None:
    text = _section(reference_books["01-pilot-pool.md"], "## Rollback")
    _in_order(
        text,
        "kubectl cordon gpu-dra-01",
        "kubectl get resourceclaims -A",
        "### Sync",
        "Set `activeWave: baseline`",
        "`release` (`15-allocator-switch/release`)",
        "`10-nodes`",
        "kubectl taint nodes gpu-dra-01 gpu-scheduling.platform.example.com/mode=dra:NoSchedule-",
        "kubectl uncordon gpu-dra-01",
        "### After the sync",
        "`nvidia.com/dra-kubelet-plugin` is gone (the release Job removed it)",
        "The DRA driver is uninstalled",
    )


def test_claim_pilot_runbook_checks_runtime_identity(reference_books: dict[str, str]) -> None:
    """The proof is read from the gate's log: the gate removes the probe, and its log with it, so a
    `logs job/<probe>` after the sync waits for a pod that never comes (the rehearsal ran it)."""
    text = reference_books["03-native-claim-pilot.md"]
    assert "kubectl -n gpuplatform-gates logs -l gpuplatform.dev/gate=claim-pilot" in text
    assert "logs job/gpu-dra-validation" not in text
    assert "UUID" in text


def test_nim_runbook_is_blue_green_with_its_rollback(mixed_books: dict[str, str]) -> None:
    text = mixed_books["05-nim.md"]
    forward = _section(text, "### After the sync", "## Evidence")
    # the operator fails a NIMService without its NIMCache: the owner makes it first
    _in_order(
        forward,
        "Cache: its owner creates NIMCache `serving/llm-dra` for `llm-dra`",
        "kubectl -n serving wait nimcache/llm-dra --for=jsonpath='{.status.state}'=Ready",
        "Apply: create NIMService `serving/llm-dra`",
        "kubectl -n serving wait nimservice/llm-dra --for=jsonpath='{.status.state}'=Ready",
        "Switch traffic: point the routes and clients of Service `llm` at Service `llm-dra`",
        "Keep `llm` running: it is the way back",
    )
    # a block runs as written: the old service is the rollback of this wave, so nothing here deletes it
    assert "delete nimservice llm\n" not in text
    # a cluster without the Gateway API has no HTTPRoute kind: the listing asks before it gets
    assert "get ingress,httproute" not in text
    assert "grep -qx httproutes.gateway.networking.k8s.io; then kubectl -n serving get httproutes" in text
    back = _section(text, "## Rollback", "### Sync")
    _in_order(back, "Switch traffic back to `llm`", "kubectl -n serving delete nimservice llm-dra")


def test_the_replaced_nim_service_is_retired_by_the_next_wave_and_restored_on_its_rollback(
    mixed_books: dict[str, str],
) -> None:
    """The capacity plan counts the old NIMService up to the wave of the move only
    (`capacity/demand.py`): the next wave's runbook retires it before its merge, and its rollback
    brings it back after the sync (its nodes are back then)."""
    text = mixed_books["06-scale.md"]
    before = _section(text, "### Before the merge", "### Sync")
    _in_order(
        before,
        "Retire NIMService `serving/llm`: `llm-dra` has served its traffic since wave `nim`",
        "kubectl -n serving delete nimservice llm",
        'until [ -z "$(kubectl -n serving get pods -l app=llm -o name)" ]; do sleep 5; done',
    )
    back = _section(text, "## Rollback")
    _in_order(
        back,
        "### After the sync",
        "Restore NIMService `serving/llm`, the way back of `llm-dra` in this wave",
        "kubectl -n serving wait nimservice/llm --for=jsonpath='{.status.state}'=Ready",
    )
    later = [name for name in mixed_books if name > "06-scale.md"]
    assert later and not any("nimservice llm\n" in mixed_books[name] for name in later)


def test_workload_owner_converts_after_the_sync_and_rolls_back_before_the_merge_never_to_zero(
    mixed_books: dict[str, str], reference_books: dict[str, str]
) -> None:
    text = mixed_books["04-apps.md"]
    forward = _section(text, "### After the sync", "## Evidence")
    assert "handoff/04-apps/workloadhandoff_research_deployment-notebook.yaml" in forward
    assert "template `notebook-gpu`" in forward
    assert "kubectl -n research rollout status deployment/notebook" in forward
    back = _section(text, "## Rollback")
    # the rollback replaces the claim pods by a rolling update before the merge, while the kubelet
    # plugin can release their claims; the workload is never scaled to zero (#38 item 8)
    _in_order(
        back,
        "### Before the merge",
        "Deployment `research/notebook` goes back to `nvidia.com/gpu`: its owner re-applies its legacy manifest",
        "kubectl -n research rollout status deployment/notebook",
        "### Sync",
    )
    for book in [*mixed_books.values(), *reference_books.values()]:
        assert "--replicas=0" not in book


def test_drain_runbook_says_what_to_drain_and_how_to_check(mixed_books: dict[str, str]) -> None:
    text = mixed_books["07-drain.md"]
    assert "drain pool(s) a100: wave cutover moves them between allocators" in text
    after = _section(text, "### After the sync", "## Evidence")
    assert "kubectl drain a100-01 a100-02 a100-03 --ignore-daemonsets" in after
    assert GPU_PODS in after  # any nvidia.com/* resource or a claim (tests/gates/test_drained.py)
    assert "if nodes=$(kubectl get nodes a100-01 a100-02 a100-03 -o name); then" in after
    # the wave that moves the pool only checks the drain instead of draining again
    cutover = _section(mixed_books["08-cutover.md"], "### Before the merge", "### Sync")
    assert (
        "Pool `a100` was drained in wave `drain`; check that no live pod there holds a GPU: any `nvidia.com/*`"
        in cutover
    )


def test_provisioner_pool_is_patched_and_replaced_and_only_selected_by_label(
    mixed_books: dict[str, str],
) -> None:
    text = mixed_books["06-scale.md"]
    assert "handoff/06-scale/nodepool_gpu-l40s.yaml" in text
    assert (
        "kubectl patch nodepool gpu-l40s --type merge --patch-file handoff/06-scale/nodepool_gpu-l40s.yaml"
        in text
    )
    assert "kubectl patch nodepool gpu-l40s --type json" in text and "kubectl replace" not in text
    assert "kubectl get nodeclaims -l karpenter.sh/nodepool=gpu-l40s" in text
    assert "kubectl get nodes -l karpenter.sh/nodepool=gpu-l40s" in text
    # never a pool name (or a provisioner name) where a node name belongs
    for name in ("l40s", "gpu-l40s"):
        assert not re.search(rf"kubectl (?:get |taint |cordon |drain |uncordon )?nodes? {name}\b", text)
        assert f"for n in {name};" not in text


def test_the_rollback_of_a_karpenter_move_reverts_the_template(mixed_books: dict[str, str]) -> None:
    back = _section(mixed_books["06-scale.md"], "## Rollback")
    _in_order(
        back,
        "kubectl get resourceclaims -A",
        "must carry `gpu-scheduling.fleet.example.com/mode=legacy`",
        "### Sync",
    )
    # the legacy labels (the wave's merge patch removes the DRA ones) before the taint goes
    _in_order(
        back,
        "kubectl patch nodepool gpu-l40s --type merge --patch-file handoff/05-nim/nodepool_gpu-l40s.yaml",
        "kubectl patch nodepool gpu-l40s --type json",
    )


def test_a_wave_that_changes_nothing_says_it_is_a_stop(reference_books: dict[str, str]) -> None:
    books = reference_books
    assert "Nothing in the cluster: this wave is a stop" in books["05-application.md"]


def test_only_the_first_transition_starts_with_the_engines_preflight(reference_books: dict[str, str]) -> None:
    preflight = "gpuplatform check <stack> --platform reference --snapshot preflight"
    first = reference_books["01-pilot-pool.md"]
    forward = _section(first, "### Before the merge", "### Sync")
    assert forward.index("gpuplatform snapshot --out preflight") < forward.index(preflight)
    assert first.count(preflight) == 1
    assert not any(preflight in text for name, text in reference_books.items() if name != "01-pilot-pool.md")


def test_only_the_first_wave_bootstraps_each_engine_with_commands_that_run(
    reference_books: dict[str, str], tmp_path: Path
) -> None:
    # GIVEN the baseline's bootstrap section (the reference platform renders both engines)
    first = _section(reference_books["00-baseline.md"], "## Bootstrap (once per cluster)", "## What exists")
    assert not any(
        "## Bootstrap" in text for name, text in reference_books.items() if name != "00-baseline.md"
    )
    commands = [line.strip() for line in first.splitlines() if line.strip().startswith("gpuplatform ")]
    assert [c.split()[1] for c in commands] == ["argocd-entry", "flux-entry"]
    assert "kubectl -n argocd apply -f reference-root.yaml" in first
    # WHEN each gpuplatform command runs on the stack
    for command in commands:
        args = shlex.split(command.split(" > ")[0].replace("<stack>", str(REPO / "stacks" / "reference.py")))
        result = CliRunner().invoke(main, args[1:])
        # THEN it prints the platform's entry
        assert result.exit_code == 0, result.stderr
        [entry] = yaml.safe_load_all(result.stdout)
        path = entry["spec"].get("path") or entry["spec"]["source"]["path"]
        assert path.endswith("dist/reference/delivery/" + ("argocd" if "argocd" in command else "flux"))
        assert entry["metadata"]["name"] == ("reference-root" if "argocd" in command else "reference")


def test_the_chart_class_check_says_what_the_wave_renders(reference: object) -> None:
    """The pilot runbook said the chart's `gpu.nvidia.com` class serves `nvidia.com/gpu` from now on
    while `plan` (and the rendered patch) said it has no extendedResourceName until the bridge wave."""
    from gpuplatform.model.platform import Platform
    from gpuplatform.render.runbooks import render_runbooks

    assert isinstance(reference, Platform)
    for bridge_source in ("chart", "platform"):
        bridges = tuple(b.model_copy(update={"source": bridge_source}) for b in reference.bridges)
        plan = plan_platform(reference.model_copy(update={"bridges": bridges}))
        books = render_runbooks(plan, {})
        seen = []
        for state in plan.waves:
            forward = books[f"{state.dir_name}.md"].split("## Rollback")[0]
            if "DeviceClass serves `nvidia.com/gpu` from now on" in forward:
                seen.append((state.name, True))
                assert plan.chart_bridges(state), state.name
            if "DeviceClass serves no `nvidia.com/gpu` yet" in forward:
                seen.append((state.name, False))
                assert not plan.chart_bridges(state), state.name
        # the driver arrives in the pilot wave, before any bridge wave
        assert seen == [("pilot-pool", False)], (bridge_source, seen)


@pytest.mark.parametrize(
    ("daemonsets", "waits"),
    [
        ({}, "one node at a time"),
        ({"rollingUpdate": {"maxUnavailable": "10%"}}, "10% of the nodes at a time"),
        ({"rollingUpdate": {"maxUnavailable": 3}}, "3 nodes at a time"),
        ({"updateStrategy": "OnDelete"}, None),
    ],
)
def test_the_preflight_waits_for_the_exporter_roll_as_the_operator_rolls_it(
    reference: object, daemonsets: dict[str, object], waits: str | None
) -> None:
    """The adoption gives the DCGM exporter DRA mode and the operator rolls it node by node: a
    preflight snapshot taken during the roll is refused (GP257), so the runbook waits for it first."""
    from gpuplatform.model.platform import Platform
    from gpuplatform.render.runbooks import render_runbooks

    assert isinstance(reference, Platform)
    # GIVEN the operator's `daemonsets` values
    values = {**reference.gpu_operator.values, "daemonsets": daemonsets}
    operator = reference.gpu_operator.model_copy(update={"values": values})
    plan = plan_platform(reference.model_copy(update={"gpu_operator": operator}))
    # WHEN the runbooks render
    forward = _section(render_runbooks(plan, {})["01-pilot-pool.md"], "### Before the merge", "### Sync")
    wait = "kubectl -n gpu-operator rollout status daemonset/nvidia-dcgm-exporter --timeout=60m"
    if waits is None:
        # THEN an exporter that rolls only on delete has no wait that could never end
        assert "rollout status" not in forward
        return
    # THEN the wait comes before the preflight's snapshot and says how the operator rolls
    _in_order(forward, waits, wait, "gpuplatform snapshot --out preflight")


def test_a_workload_of_another_resource_is_told_by_its_own_name() -> None:
    """gke-production's CronJob asks for MIG slices: its owner removes and gets back those limits."""
    loaded = load_stack(REPO / "tests" / "fleets" / "gke-production.yaml")[0]
    files = render_files(loaded)
    text = files["runbooks/10-mig-jobs.md"].decode()
    forward, back = _section(text, "### After the sync", "## Evidence"), _section(text, "## Rollback")
    assert "remove the `nvidia.com/mig-1g.10gb` limits" in forward
    assert "goes back to `nvidia.com/mig-1g.10gb`" in back and "(`nvidia.com/mig-1g.10gb` limits)" in back
    assert "nvidia.com/gpu` limits" not in forward + back
