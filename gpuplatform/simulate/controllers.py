"""The pods a spec workload's controller makes: their names and owner references, as the
controllers set them, so a snapshot of the model reads like one of a real cluster (`evidence`,
`capacity --snapshot` and the register find each pod's workload through its owner).

Sources (kubernetes/kubernetes): the Deployment controller names a ReplicaSet
`<deployment>-<pod-template-hash>` and labels its pods with the hash
(`pkg/controller/deployment/sync.go` `getNewReplicaSet`: `d.Name + "-" + podTemplateSpecHash`); a StatefulSet's pods are `<set>-<ordinal>`
(`pkg/controller/statefulset/stateful_set_utils.go`); ReplicaSets, DaemonSets and Jobs name pods
`<owner>-<5 random characters>` (`GenerateName`); the CronJob controller names each Job
`<cronjob>-<scheduled time in minutes>` (`pkg/controller/cronjob/cronjob_controllerv2.go`
`getJobName`: `fmt.Sprintf("%s-%d", cj.Name, getTimeHashInMinutes(scheduledTime))`).
"""

from __future__ import annotations

import hashlib
from typing import Any

__all__ = ["cron_job_name", "owner_references", "replica_names", "suffix"]

_APPS = {"ReplicaSet", "StatefulSet", "DaemonSet"}
#: The scheduled time (minutes since the epoch) of the model's one CronJob run.
_SCHEDULED = "29000000"


def suffix(*parts: str) -> str:
    """A deterministic 5-character suffix, as controllers add random ones to the pods they create."""
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:5]


def _template_hash(name: str) -> str:
    """A deterministic `pod-template-hash` (10 characters, as the Deployment controller's)."""
    return suffix(name, "template") + suffix(name, "hash")


def cron_job_name(name: str) -> str:
    """The Job the CronJob controller creates for its run."""
    return f"{name}-{_SCHEDULED}"


def replica_names(kind: str, name: str, replicas: int) -> list[str]:
    """The names of the `replicas` pods a `kind` called `name` runs (a bare Pod is itself)."""
    if kind == "Pod":
        return [name]
    if kind == "StatefulSet":
        return [f"{name}-{k}" for k in range(replicas)]
    owner = {"Deployment": f"{name}-{_template_hash(name)}", "CronJob": cron_job_name(name)}.get(kind, name)
    return [f"{owner}-{suffix(owner, str(k))}" for k in range(replicas)]


def owner_references(kind: str, name: str) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The `ownerReferences` and labels the controller gives a pod of `kind` `name`."""
    if kind == "Pod":
        return [], {}
    labels: dict[str, str] = {}
    owner_kind, owner = kind, name
    if kind == "Deployment":
        owner_kind, owner = "ReplicaSet", f"{name}-{_template_hash(name)}"
        labels["pod-template-hash"] = _template_hash(name)
    elif kind == "CronJob":
        owner_kind, owner = "Job", cron_job_name(name)
    if owner_kind == "Job":
        labels |= {"job-name": owner, "batch.kubernetes.io/job-name": owner}
    api = "apps/v1" if owner_kind in _APPS else "batch/v1"
    reference = {
        "apiVersion": api,
        "kind": owner_kind,
        "name": owner,
        "controller": True,
        "blockOwnerDeletion": True,
    }
    return [reference], labels
