"""Gate definitions and their Jobs: which gates a wave has, what they may do, how they re-run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpuplatform.gates import gates_for_wave
from gpuplatform.model import Platform
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.gate_jobs import gate_identity, render_gate_jobs
from gpuplatform.render.gate_rerun import rerun_steps
from gpuplatform.render.tree import render_tree
from tests.gates.harness import fleet_doc, load_platform


def test_every_wave_has_the_gates_its_state_calls_for(reference: Platform) -> None:
    plan = plan_platform(reference)
    for state in plan.waves:
        ids = {g.id for g in gates_for_wave(plan, state)}
        assert ("rollback-safety" in ids) == (bool(state.legacy_pools) or not state.driver_installed), (
            state.name
        )
        assert ("allocator-exclusivity" in ids) == state.driver_installed, state.name
        dra = state.driver_installed and bool(state.dra_pools)
        assert ("inventory" in ids) == dra and ("operands" in ids) == dra, state.name
        assert ("claim-pilot" in ids) == state.validation, state.name
        assert ("bridge" in ids) == bool(state.bridges), state.name
        phases = [g.phase for g in gates_for_wave(plan, state)]
        assert phases == sorted(phases, key=lambda p: p != "pre")


def _objects(plan_of: Platform, wave: str) -> list[dict[str, Any]]:
    plan = plan_platform(plan_of)
    return render_gate_jobs(plan, plan.wave(wave))


def test_the_identity_only_lists_cluster_wide(reference: Platform) -> None:
    identity = gate_identity(plan_platform(reference), "baseline")
    [role] = [o for o in identity if o["kind"] == "ClusterRole"]
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["nodes", "pods"], "verbs": ["list"]},
        {
            "apiGroups": ["resource.k8s.io"],
            "resources": ["deviceclasses", "resourceclaims", "resourceslices"],
            "verbs": ["list"],
        },
    ]
    [account] = [o for o in identity if o["kind"] == "ServiceAccount"]
    assert account["automountServiceAccountToken"] is False


def test_logs_and_removal_only_in_the_validation_and_gates_namespaces(reference: Platform) -> None:
    roles = {
        o["metadata"]["namespace"]: o["rules"]
        for o in _objects(reference, "compatibility-bridge")
        if o["kind"] == "Role"
    }
    expected = [
        {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "delete"]},
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"], "verbs": ["get"]},
    ]
    assert roles == {"gpu-dra-pilot": expected, "gpuplatform-gates": expected}
    # and only in waves whose gates read logs
    assert not [o for o in _objects(reference, "driver-validation") if o["kind"] in ("Role", "RoleBinding")]


def test_every_job_has_requests_limits_and_a_pinnable_image(tmp_path: Path) -> None:
    doc = fleet_doc()
    digest = "sha256:" + "a" * 64
    doc["spec"]["delivery"]["kubectlImageDigest"] = digest
    doc["spec"]["validation"]["image"] = f"nvcr.io/nvidia/cuda:12.9.1-base-ubuntu24.04@{'sha256:' + 'b' * 64}"
    platform = load_platform(tmp_path, doc)
    jobs = [o for o in _objects(platform, "bridge") if o["kind"] == "Job"]
    assert {j["metadata"]["labels"].get("gpuplatform.dev/validation") for j in jobs} == {
        None,
        "claim-pilot",
        "bridge-legacy",
        "bridge-dra",
    }
    for job in jobs:
        pod = job["spec"]["template"]["spec"]
        [container] = pod["containers"]
        assert set(container["resources"]["requests"]) >= {"cpu", "memory"}, job["metadata"]["name"]
        assert set(container["resources"]["limits"]) >= {"cpu", "memory"}, job["metadata"]["name"]
        assert "@sha256:" in container["image"]
        assert job["spec"]["backoffLimit"] == 0
        assert job["spec"]["podFailurePolicy"]["rules"][0]["onExitCodes"]["values"] == [3]
        assert "activeDeadlineSeconds" not in job["spec"] and "ttlSecondsAfterFinished" not in job["spec"]
        if "gpuplatform.dev/gate" in job["metadata"]["labels"]:
            assert container["image"].endswith(digest)
            assert pod["automountServiceAccountToken"] is True
        else:
            assert pod["automountServiceAccountToken"] is False


def test_the_validation_pod_holds_its_claim_until_removed(reference: Platform) -> None:
    [job] = [
        o
        for o in _objects(reference, "native-claim-pilot")
        if o["metadata"]["labels"].get("gpuplatform.dev/validation") == "claim-pilot"
    ]
    assert job["metadata"]["namespace"] == "gpu-dra-pilot"
    assert job["metadata"]["annotations"]["argocd.argoproj.io/hook"] == "PostSync"
    pod = job["spec"]["template"]["spec"]
    assert pod["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": "hopper-large-gpu"}]
    assert pod["containers"][0]["resources"]["claims"] == [{"name": "gpu"}]
    script = pod["containers"][0]["command"][2]
    assert script.splitlines() == [
        "trap 'exit 0' TERM",
        'nvidia-smi -L || echo "gpuplatform: nvidia-smi -L failed with status $?"',
        "sleep 900 &",
        "wait $!",
        "exit 3",
    ]
    assert pod["tolerations"] == [
        {
            "key": "gpu-scheduling.platform.example.com/mode",
            "operator": "Equal",
            "value": "dra",
            "effect": "NoSchedule",
        },
        # a new node group copies the old group's GPU taint (#38 item 8)
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
    ]


def test_bridge_pods_are_pinned_to_each_side_by_pool_selector(tmp_path: Path) -> None:
    platform = load_platform(tmp_path, fleet_doc())
    jobs = {
        o["metadata"]["labels"]["gpuplatform.dev/validation"]: o["spec"]["template"]["spec"]
        for o in _objects(platform, "bridge")
        if o["kind"] == "Job" and "gpuplatform.dev/validation" in o["metadata"]["labels"]
    }

    def terms(pod: dict[str, Any]) -> list[Any]:
        return pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"
        ]

    assert terms(jobs["bridge-legacy"]) == [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a100-01", "a100-02"]}]},
        {
            "matchExpressions": [
                {"key": "eks.amazonaws.com/nodegroup", "operator": "In", "values": ["h100-ng"]}
            ]
        },
    ]
    assert terms(jobs["bridge-dra"]) == [
        {"matchExpressions": [{"key": "karpenter.sh/nodepool", "operator": "In", "values": ["gpu-l40s"]}]}
    ]
    assert jobs["bridge-dra"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert "tolerations" not in jobs["bridge-legacy"]


def test_the_validation_job_is_a_gate_hook_not_a_tenant_object(reference: Platform) -> None:
    tree = render_tree(plan_platform(reference))
    paths = [p for p, c in tree.files.items() if isinstance(c, list) and c[0].get("kind") == "Job"]
    assert not [p for p in paths if "/40-tenants/" in p]
    assert [p for p in paths if "/50-gates/post/job_gpu-dra-pilot_gpu-dra-validation-" in p]


def test_job_names_change_with_the_wave(reference: Platform) -> None:
    before, after = (
        {o["metadata"]["name"] for o in _objects(reference, wave) if o["kind"] == "Job"}
        for wave in ("driver-validation", "native-claim-pilot")
    )
    assert len(before) == 4 and len(after) == 6 and not before & after
    assert all(len(name) <= 63 for name in before | after)


def test_rerun_steps_name_each_engine(reference: Platform) -> None:
    plan = plan_platform(reference)
    text = "\n".join(rerun_steps(plan, plan.wave("native-claim-pilot")))
    assert "argocd app sync reference" in text and "argocd app terminate-op reference" in text
    assert "flux reconcile kustomization reference-gates-post -n flux-system --with-source" in text
    assert "kubectl -n gpu-dra-pilot delete job -l gpuplatform.dev/wave=native-claim-pilot" in text
    assert "every 15 min by itself" in text
