"""A spec CronJob in the rehearsal: the CronJob itself (the runbook reads and deletes it) and its
run, owned by it as `kubectl create job --from=cronjob/NAME` makes one."""

from __future__ import annotations

from gpuplatform.rehearse.workloads import CRON_SCHEDULE, _controller, _run_of


def test_a_cronjob_is_suspended_and_its_run_is_owned_by_it() -> None:
    pod = {
        "containers": [
            {"name": "main", "image": "x", "resources": {"limits": {"nvidia.com/mig-1g.10gb": "1"}}}
        ]
    }
    cronjob = _controller("CronJob", "research", "nightly-eval", 1, pod, "team-queue")
    assert cronjob["kind"] == "CronJob" and cronjob["spec"]["suspend"] is True
    assert cronjob["spec"]["schedule"] == CRON_SCHEDULE
    job = cronjob["spec"]["jobTemplate"]["spec"]
    assert job["template"]["spec"]["restartPolicy"] == "Never" and job["completions"] == 1
    cronjob["metadata"]["uid"] = "u-1"
    run = _run_of(cronjob)
    assert run["kind"] == "Job" and run["metadata"]["name"] == "nightly-eval"
    assert run["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "name": "nightly-eval",
            "uid": "u-1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert run["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-queue"
    assert run["spec"] == job
