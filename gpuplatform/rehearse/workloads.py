"""The workloads a rehearsal runs, as real objects, and what their owners do when the runbook says so.

The same mix `simulate/workloads.py` replays: an unmigrated `nvidia.com/gpu` Deployment pinned to
each legacy pool and one that tolerates every taint the migration sets (nothing but the scheduler
keeps it off DRA nodes), each spec workload in its legacy form (converted by its owner in its wave), and one claim
Deployment per claim template of every tenant in the wave. Owners are the teams the runbook hands
off to: they convert a workload with its hand-off (the claim of `handoff/<wave>/workloadhandoff_*`
and its tolerations), restore its legacy form on the way back, and remove their claim workloads
before a rollback takes the pool or the tenant away.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpuplatform.kueue.model import QUEUE_LABEL
from gpuplatform.model.workloads import Workload as SpecWorkload
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.rehearse.client import Obj
from gpuplatform.rehearse.cluster import Rehearsal
from gpuplatform.render.tenants import dra_pool_tolerations
from gpuplatform.render.workload_handoff import extended_resource_toleration, workload_template_name

__all__ = ["Declared", "Owners"]

_IMAGE = "registry.example.com/workload:rehearsal"
_MANAGER = "rehearsal-owner"


@dataclass(frozen=True)
class Declared:
    """A workload that must keep running (outside its own move): kind, namespace, name, replicas."""

    kind: str
    namespace: str
    name: str
    replicas: int
    pools: tuple[str, ...] = ()
    """The pools it may run on ('': any)."""


#: A CronJob's schedule here. It is suspended: its run is the one Job the owners create from it
#: (`_run_of`), so that kube-controller-manager's CronJob controller, on wall time, adds none.
CRON_SCHEDULE = "0 3 * * *"


def _namespace(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def _controller(
    kind: str, namespace: str, name: str, replicas: int, pod: Obj, queue: str | None = None
) -> Obj:
    """The workload's controller; `queue`: submitted to that LocalQueue (Kueue's label on the Job)."""
    labels = {"app": name}
    pod = {"metadata": {"labels": labels}, "spec": pod}
    spec: dict[str, Any]
    if kind in ("Deployment", "StatefulSet"):
        spec = {"replicas": replicas, "selector": {"matchLabels": labels}, "template": pod}
        if kind == "StatefulSet":
            spec["serviceName"] = name
        api = "apps/v1"
    elif kind == "DaemonSet":
        spec, api = {"selector": {"matchLabels": labels}, "template": pod}, "apps/v1"
    else:  # a Job (or a CronJob's): as many pods as replicas, running until deleted
        pod["spec"]["restartPolicy"] = "Never"
        job = {"parallelism": replicas, "completions": replicas, "backoffLimit": 6, "template": pod}
        spec, api = job, "batch/v1"
        if kind == "CronJob":
            template = {"metadata": {"labels": labels | ({QUEUE_LABEL: queue} if queue else {})}, "spec": job}
            spec = {"schedule": CRON_SCHEDULE, "suspend": True, "jobTemplate": template}
    queued = {QUEUE_LABEL: queue} if queue else {}
    return {
        "apiVersion": api,
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace, "labels": labels | queued},
        "spec": spec,
    }


def _run_of(cronjob: Obj) -> Obj:
    """A run of `cronjob` now, as `kubectl create job --from=cronjob/NAME` creates it: its job
    template, owned by the CronJob (deleting the CronJob deletes its run), named as the CronJob."""
    meta = cronjob["metadata"]
    template = cronjob["spec"]["jobTemplate"]
    owner = {"apiVersion": "batch/v1", "kind": "CronJob", "name": meta["name"], "uid": meta["uid"]}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": meta["name"],
            "namespace": meta["namespace"],
            "labels": dict((template.get("metadata") or {}).get("labels") or {}),
            "annotations": {"cronjob.kubernetes.io/instantiate": "manual"},
            "ownerReferences": [owner | {"controller": True, "blockOwnerDeletion": True}],
        },
        "spec": template["spec"],
    }


def _container(resources: Obj | None = None, claims: list[str] | None = None) -> Obj:
    container: Obj = {"name": "main", "image": _IMAGE}
    res: Obj = {}
    if resources:
        res["limits"] = resources
    if claims:
        res["claims"] = [{"name": c} for c in claims]
    if res:
        container["resources"] = res
    return container


@dataclass
class Owners:
    """The teams whose workloads the migration moves, acting on the rehearsal cluster."""

    cluster: Rehearsal
    plan: Plan
    manifests: Mapping[str, str] = field(default_factory=dict)
    """The teams' own manifests the spec names (`LoadedPlatform.manifests`)."""

    def start(self) -> None:
        """What runs before the migration: every spec workload in its legacy form, its team's own
        manifest where the spec names one. Nothing the spec does not declare: the runbook's
        preflight (`check --snapshot`) refuses a cluster whose GPU pods the plan leaves with nowhere
        to run (GP280), as it should on a real one."""
        objects: list[Obj] = []
        for w in self.plan.platform.workloads:
            own = self._manifest(w) or w.kind == "CronJob"
            objects += [_namespace(w.namespace)] + ([] if own else [self._legacy(w)])
        self.cluster.apply(_unique(objects), _MANAGER)
        for w in self.plan.platform.workloads:
            if text := self._manifest(w):
                self.cluster.kubectl(["apply", "-n", w.namespace, "-f", "-"], stdin=text)
            elif w.kind == "CronJob":
                self._replace(self._legacy(w))

    def _manifest(self, w: SpecWorkload) -> str | None:
        """The team's manifest of `w` (a CronJob is the rehearsal's own, with its run: `_run_of`)."""
        return self.manifests.get(w.manifest) if w.manifest and w.kind != "CronJob" else None

    def _redeploy(self, w: SpecWorkload) -> None:
        """The owner deploys `w` again in its legacy form: its manifest as the team applies it
        (`kubectl apply`, so what a later apply drops is removed), else the rehearsal's own."""
        if (text := self._manifest(w)) is None:
            self._replace(self._legacy(w))
            return
        if w.kind == "Job":
            self.cluster.delete("Job", w.name, w.namespace, wait=True)
        self.cluster.kubectl(["apply", "-n", w.namespace, "-f", "-"], stdin=text)

    def _legacy(self, w: SpecWorkload) -> Obj:
        pod: Obj = {"containers": [_container({w.resource: str(w.gpus)})]}
        if w.node_selector:
            pod["nodeSelector"] = dict(w.node_selector)
        if w.tolerations:
            pod["tolerations"] = [
                t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in w.tolerations
            ]
        return _controller(w.kind, w.namespace, w.name, w.replicas, pod, w.queue)

    def _converted(self, w: SpecWorkload) -> Obj:
        p = self.plan.platform
        own = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in w.tolerations]
        added = [extended_resource_toleration(w.resource), *dra_pool_tolerations(p)]
        pod: Obj = {
            "containers": [_container(claims=["gpu"])],
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": workload_template_name(w)}],
            "tolerations": own + [t for t in added if t not in own],
        }
        if w.node_selector:
            pod["nodeSelector"] = dict(w.node_selector)
        return _controller(w.kind, w.namespace, w.name, w.replicas, pod, w.queue)

    def _replace(self, obj: Obj) -> None:
        """An owner's deploy (server-side apply replaces what the owner applied before); a Job is
        immutable, so it is deleted and created again, and so is a CronJob's run."""
        meta = obj["metadata"]
        if obj["kind"] == "Job":
            self.cluster.delete("Job", meta["name"], meta["namespace"], wait=True)
        self.cluster.apply([obj], _MANAGER)
        if obj["kind"] == "CronJob":
            cronjob = self.cluster.client.get("CronJob", meta["name"], meta["namespace"])
            assert cronjob is not None
            self.cluster.delete("Job", meta["name"], meta["namespace"], wait=True)
            self.cluster.client.create("Job", _run_of(cronjob), meta["namespace"])

    def convert(self, a: WaveState, b: WaveState) -> list[str]:
        """`convert-workloads`: each workload that moves in `b` is deployed in its claim form. One
        with a manifest is converted by the runbook's own block (`kubectl apply` of its converted
        manifest)."""
        done = []
        for i, w in enumerate(self.plan.platform.workloads):
            if i in b.workloads and i not in a.workloads and self._manifest(w) is None:
                self._replace(self._converted(w))
                done.append(f"{w.kind} {w.namespace}/{w.name} converted to a claim")
        return done

    def restore(self, a: WaveState, b: WaveState, *, jobs: bool) -> list[str]:
        """`roll-back-workloads` (before the merge; `restore-legacy-workloads` after it finds them done):
        each workload that leaves its claim in `b` gets its legacy form back; `jobs`: the Jobs (and
        CronJobs) only, else every other kind."""
        done = []
        for i, w in enumerate(self.plan.platform.workloads):
            if i in a.workloads and i not in b.workloads and (w.kind in ("Job", "CronJob")) == jobs:
                self._redeploy(w)
                done.append(f"{w.kind} {w.namespace}/{w.name} restored to nvidia.com/gpu")
        return done

    def claim_workloads(self, state: WaveState) -> list[Obj]:
        """One claim Deployment per claim template of every tenant of `state` (tolerating the DRA taints)."""
        p = self.plan.platform
        tiers = {t.name for t in p.tiers}
        tolerations = dra_pool_tolerations(p)
        out = []
        for tenant in p.tenants:
            if tenant.name not in state.tenants:
                continue
            for template in tenant.claim_templates:
                if template.tier not in tiers:
                    continue
                pod = {
                    "containers": [_container(claims=["gpu"])],
                    "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": template.name}],
                    "tolerations": list(tolerations),
                }
                out.append(_controller("Deployment", tenant.ns, f"{template.name}-user", 1, pod))
        return out

    def tenants_deploy(self, state: WaveState) -> list[str]:
        """Tenants of `state` run their claim workloads (their templates exist once the wave synced)."""
        wanted = self.claim_workloads(state)
        existing = [
            o
            for o in wanted
            if self.cluster.client.get("Deployment", o["metadata"]["name"], o["metadata"]["namespace"])
        ]
        fresh = [o for o in wanted if o not in existing]
        self.cluster.apply(fresh, _MANAGER)
        return [
            f"tenant workload {o['metadata']['namespace']}/{o['metadata']['name']} created" for o in fresh
        ]

    def release_claims(self, a: WaveState, b: WaveState, pools: tuple[str, ...]) -> list[str]:
        """`release-claims`, what the runbook leaves to the owners: the tenants that leave remove
        their claim workloads; the owners of claim-holding pods on the pools that go back move them off
        (the pod goes, its controller makes another wherever the scheduler puts it). A converted
        workload that goes back was rolled back before (`roll-back-workloads`, `restore`)."""
        done = []
        gone = {t.ns for t in self.plan.platform.tenants if t.name in a.tenants and t.name not in b.tenants}
        for obj in self.claim_workloads(a):
            meta = obj["metadata"]
            if meta["namespace"] in gone:
                self.cluster.delete("Deployment", meta["name"], meta["namespace"])
                done.append(f"tenant workload {meta['namespace']}/{meta['name']} removed")
        fleet = self.cluster.agents.fleet
        for pod in self.cluster.client.list("Pod"):
            meta, node = pod["metadata"], str(pod["spec"].get("nodeName") or "")
            holds = pod["spec"].get("resourceClaims") or (pod.get("status") or {}).get(
                "extendedResourceClaimStatus"
            )
            ours = self.cluster.launcher.is_program(pod)
            if (
                holds
                and not ours
                and node in fleet
                and fleet[node].pool in pools
                and not meta.get("deletionTimestamp")
            ):
                self.cluster.delete("Pod", meta["name"], meta["namespace"])
                done.append(f"pod {meta['namespace']}/{meta['name']} moved off {node}")
        return done

    def declared(self, state: WaveState) -> list[Declared]:
        """Workloads of `state` that must keep running: the spec's and the tenants' claim workloads."""
        out = [
            Declared(w.kind if w.kind != "CronJob" else "Job", w.namespace, w.name, w.replicas)
            for w in self.plan.platform.workloads
        ]
        out += [
            Declared("Deployment", o["metadata"]["namespace"], o["metadata"]["name"], 1)
            for o in self.claim_workloads(state)
        ]
        return out


def _unique(objects: list[Obj]) -> list[Obj]:
    seen, out = set(), []
    for obj in objects:
        key = (obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"])
        if key not in seen:
            seen.add(key)
            out.append(obj)
    return out
