"""The validation probes run on the nodes they prove (#38 item 8)."""

from __future__ import annotations

from pathlib import Path

from gpuplatform.kube.nodes import tolerates
from gpuplatform.load.stacks import load_stack
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.validation import validation_jobs

REPO = Path(__file__).resolve().parents[2]


def test_the_probes_tolerate_the_gpu_taint_a_new_node_group_copies() -> None:
    # GIVEN a new EKS group created as a copy of the old one, whose `nvidia.com/gpu=true:NoSchedule`
    # taint create-nodegroup copies along with the hand-off's DRA taint
    copied = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
    (loaded, *_) = load_stack(REPO / "stacks" / "reference.py")
    plan = plan_platform(loaded.platform)
    # WHEN the claim-pilot and bridge probes are rendered THEN each on DRA nodes tolerates it (else the
    # claim-pilot gate would retry for ever)
    probes = [
        job["spec"]["template"]["spec"]
        for state in plan.waves
        for job in validation_jobs(plan, state).objects
        if job["kind"] == "Job" and "tolerations" in job["spec"]["template"]["spec"]
    ]
    assert probes
    assert all(any(tolerates(t, copied) for t in pod["tolerations"]) for pod in probes)
