"""Argo CD and Flux as the rehearsal runs them: the rendered units, in the engine's order, applied to
the real apiserver with the real kubectl (server-side, the engine's field manager), waited for by
the objects' real status, pruned as the engine prunes.

The order and the releases come from the rendered entry points (`simulate/rendered.py`, which cites
kustomize-controller v1.9.4 `dependsOn` and gitops-engine v0.7.3 phases, waves and kinds); what
happens in the cluster is the apiserver's and the controllers'. A HelmRelease, or an Argo CD child
Application of a chart, installs its release through `stack.py`; deleting it uninstalls it (Flux
always, Argo CD with `resources-finalizer.argocd.argoproj.io`, else the release stays orphaned).
The entry objects (Kustomizations, Applications) are kept in the cluster with the status the runbook
reads: a Kustomization's Ready condition and `lastAppliedRevision`, an Application's sync status,
health and operation phase.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gpuplatform.labels import GATE_LABEL, SWITCH_LABEL
from gpuplatform.plan.sync_order import SYNC_UNITS, unit_of_folder
from gpuplatform.rehearse.client import ApiError, Obj
from gpuplatform.rehearse.cluster import ApplyFailed, Rehearsal, WaitFailed
from gpuplatform.rehearse.crds import ENGINE_KINDS
from gpuplatform.simulate.rendered import ARGO_OPTIONS, EngineWave, ReleaseSpec, Unit

__all__ = ["Engine", "SyncFailed"]

_ENGINE_KINDS = {k for _, _, k, _ in ENGINE_KINDS}
_PRUNE_DISABLED = "kustomize.toolkit.fluxcd.io/prune"
_KIND_FIRST = (
    "CustomResourceDefinition",
    "Namespace",
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "ConfigMap",
)
#: Virtual seconds an engine waits for a unit's health: three attempts of a gate (a gate that does not
#: hold fails two attempts, which ends the wait sooner).
HEALTH_TIMEOUT = 2700.0
#: Applies of a unit the engine makes before its sync fails, and the virtual seconds between them.
_APPLY_ATTEMPTS = 3
#: Failed attempts of a gate or switch that end the wait before the timeout.
_ATTEMPTS = 2
_ARGO_UNITS = {u.argo_wave: u.id for u in SYNC_UNITS if u.argo_hook in ("", "Sync")}
_HOOK_UNITS = {"PreSync": "gates-pre", "PostSync": "gates-post"}


class SyncFailed(Exception):
    """The sync stopped: which unit, and why."""


def _key(obj: Obj) -> str:
    meta = obj["metadata"]
    return f"{obj['kind']}/{meta.get('namespace', '')}/{meta['name']}"


def _annotations(obj: Obj) -> dict[str, str]:
    return obj["metadata"].get("annotations") or {}


def _order(obj: Obj) -> tuple[int, str]:
    kind = obj["kind"]
    return (_KIND_FIRST.index(kind) if kind in _KIND_FIRST else len(_KIND_FIRST), kind)


@dataclass
class Engine:
    """One engine's memory: what each unit applied (its inventory) and the releases it installed."""

    cluster: Rehearsal
    name: str
    platform: str
    inventory: dict[str, dict[str, Obj]] = field(default_factory=dict)
    releases: dict[str, ReleaseSpec] = field(default_factory=dict)
    """HelmRelease or child Application name -> the release it installed."""
    log: list[str] = field(default_factory=list)

    @property
    def manager(self) -> str:
        return "kustomize-controller" if self.name == "flux" else "argocd-controller"

    # --- one sync ---------------------------------------------------------------------------------

    def sync(self, wave: EngineWave, revision: str, done: Callable[[str], None]) -> None:
        """Apply the wave's units in order, each healthy before the next; SyncFailed when one is not.
        `done` is told the sync unit (`SYNC_UNITS` id) each applied unit completes."""
        self._entry(wave, revision, "Progressing")
        try:
            if self.name == "flux":
                self._flux(wave, done)
            else:
                self._argocd(wave, done)
        except SyncFailed as exc:
            self._entry(wave, revision, f"Failed: {exc}")
            raise
        self._entry(wave, revision, "Succeeded")

    def _flux(self, wave: EngineWave, done: Callable[[str], None]) -> None:
        kept = {u.name for u in wave.units}
        for name in sorted(
            set(self.inventory) - kept
        ):  # a Kustomization the entry dropped: its finalizer prunes
            self._prune(self.inventory.pop(name), {})
        for unit in wave.units:
            applied = self._apply_unit(unit, wave)
            if unit.prune:
                self._prune(self.inventory.get(unit.name, {}), applied)
            self.inventory[unit.name] = applied
            if unit.wait:
                self._wait_healthy(unit.name, list(applied.values()))
            self._kustomization_ready(unit.name)
            if unit.folder:
                done(unit_of_folder(unit.folder).id)

    def _argocd(self, wave: EngineWave, done: Callable[[str], None]) -> None:
        desired: dict[str, Obj] = {}
        for unit in wave.units:
            if unit.hook:
                for obj in unit.objects:  # BeforeHookCreation: the previous hook goes first
                    meta = obj["metadata"]
                    self.cluster.delete(
                        obj["kind"],
                        meta["name"],
                        meta.get("namespace", ""),
                        api_version=obj["apiVersion"],
                        wait=True,
                    )
            applied = self._apply_unit(unit, wave)
            if not unit.hook:
                desired |= applied
            self._wait_healthy(unit.name, list(applied.values()))
            unit_id = _HOOK_UNITS.get(unit.hook) if unit.hook else _ARGO_UNITS.get(unit.wave)
            if unit_id:
                done(unit_id)
        if wave.prune:
            self._prune(self.inventory.get("app", {}), desired, argo=True)
            self.inventory["app"] = desired
        else:
            self.inventory["app"] = self.inventory.get("app", {}) | desired

    # --- apply ------------------------------------------------------------------------------------

    def _apply_unit(self, unit: Unit, wave: EngineWave) -> dict[str, Obj]:
        objects = sorted(unit.objects, key=_order)
        for obj in objects:
            if obj["kind"] == "Job":
                self.cluster.launcher.programs.add(
                    (obj["metadata"].get("namespace", "default"), obj["metadata"]["name"])
                )
        for attempt in range(_APPLY_ATTEMPTS):
            try:
                self.cluster.apply(objects, self.manager)
                break
            except ApplyFailed as exc:
                if attempt == _APPLY_ATTEMPTS - 1:
                    raise SyncFailed(f"{unit.name}: the apiserver refused the apply: {exc}") from None
                self._retry_later(unit)
        for obj in objects:
            name = obj["metadata"]["name"]
            if obj["kind"] in ("HelmRelease", "Application") and name in wave.releases:
                release = wave.releases[name]
                self.cluster.stack.install(release)
                self.releases[name] = release
                self.log.append(
                    f"{self.name}: {obj['kind']} {name} installs {release.chart} {release.version}"
                )
        self.log.append(f"{self.name}: {unit.name} applied {len(objects)} object(s)")
        return {_key(o): o for o in objects}

    def _prune(self, old: dict[str, Obj], new: dict[str, Obj], *, argo: bool = False) -> None:
        for key, obj in old.items():
            if key in new:
                continue
            notes = _annotations(obj)
            if notes.get(_PRUNE_DISABLED) == "disabled" or "Prune=false" in notes.get(ARGO_OPTIONS, ""):
                continue
            if obj["kind"] == "Node":
                continue  # never deleted: the engines' own guard for partial Nodes is in the tree's annotations
            name = obj["metadata"]["name"]
            if obj["kind"] in ("HelmRelease", "Application") and name in self.releases:
                release = self.releases.pop(name)
                finalizer = obj["kind"] == "HelmRelease" or "resources-finalizer.argocd.argoproj.io" in (
                    obj["metadata"].get("finalizers") or []
                )
                if finalizer:
                    self.cluster.stack.uninstall(release.chart)
                    self.log.append(f"{self.name}: {obj['kind']} {name} deleted: {release.chart} uninstalled")
                else:
                    self.log.append(
                        f"{self.name}: Application {name} deleted without its finalizer: {release.chart} orphaned"
                    )
            namespace = obj["metadata"].get("namespace", "")
            self.cluster.delete(obj["kind"], name, namespace, api_version=obj["apiVersion"])
            self.log.append(f"{self.name}: pruned {key}")

    # --- health -----------------------------------------------------------------------------------

    def _wait_healthy(self, unit: str, objects: list[Obj]) -> None:
        watched = [o for o in objects if o["kind"] in ("Job", "DaemonSet", "Deployment", "StatefulSet")]
        if not watched:
            return

        def healthy() -> bool:
            for obj in watched:
                state = self._health(obj)
                if state.startswith("failed"):
                    raise SyncFailed(f"{unit}: {obj['kind']} {obj['metadata']['name']} {state}")
                if state != "healthy":
                    return False
            return True

        try:
            self.cluster.wait(healthy, HEALTH_TIMEOUT, f"{unit} healthy")
        except WaitFailed as exc:
            states = "; ".join(f"{o['kind']} {o['metadata']['name']}: {self._health(o)}" for o in watched)
            raise SyncFailed(f"{exc} ({states})") from None

    def _health(self, obj: Obj) -> str:
        meta = obj["metadata"]
        live = self.cluster.client.get(obj["kind"], meta["name"], meta.get("namespace", ""))
        if live is None:
            return "missing"
        status: dict[str, Any] = live.get("status") or {}
        if obj["kind"] == "Job":
            conditions = {c["type"]: c for c in status.get("conditions") or [] if c.get("status") == "True"}
            if "Complete" in conditions:
                return "healthy"
            if "Failed" in conditions:
                return f"failed: {conditions['Failed'].get('reason', '')} {conditions['Failed'].get('message', '')}".strip()
            checks = {GATE_LABEL, SWITCH_LABEL} & set(live["metadata"].get("labels") or {})
            attempt = self._failed_attempt(live) if checks else ""
            return f"failed: {attempt}" if attempt else "running"
        if obj["kind"] == "DaemonSet":
            ready = (
                status.get("desiredNumberScheduled", 0)
                == status.get("numberReady", -1)
                == status.get("updatedNumberScheduled", -2)
            )
            return (
                "healthy"
                if ready and status.get("observedGeneration") == live["metadata"].get("generation")
                else "progressing"
            )
        ready = status.get("readyReplicas", 0) >= (live.get("spec") or {}).get("replicas", 1)
        return "healthy" if ready else "progressing"

    def _failed_attempt(self, job: Obj) -> str:
        """A gate's or switch's second failed attempt (exit 3: its check did not hold within its
        timeout, twice): the runbook's order gave the cluster that long, so the sync is stuck. One
        failed attempt is no verdict: the Job's podFailurePolicy ignores exit 3 and starts the next
        (a switch that finds its node changed before labelling it exits 3 at once). A probe's exit 3
        is its own cadence (its gate removes it). The Job's pods are the ones its controller labelled
        with its name; a pod stopped by an eviction is no attempt."""
        meta = job["metadata"]
        namespace = str(meta.get("namespace", ""))
        failed: list[str] = []
        for pod in self.cluster.client.list(
            "Pod", namespace, labelSelector=f"batch.kubernetes.io/job-name={meta['name']}"
        ):
            status = pod.get("status") or {}
            if any(c.get("type") == "DisruptionTarget" for c in status.get("conditions") or []):
                continue
            for container in status.get("containerStatuses") or []:
                code = ((container.get("state") or {}).get("terminated") or {}).get("exitCode")
                if code not in (None, 0):
                    log = (
                        self.cluster.launcher.log(namespace, pod["metadata"]["name"], container["name"]) or ""
                    )
                    failed.append(f"an attempt exited {code}: " + " | ".join(log.strip().splitlines()[-6:]))
        return failed[-1] if len(failed) >= _ATTEMPTS else ""

    def _retry_later(self, unit: Unit) -> None:
        """Wait as the engine does before it applies a refused unit again: the unit's `retry_after`,
        read from the rendered Kustomization or Application (`simulate.rendered.Unit`). An admission
        policy the previous unit changed reaches the apiserver's policy cache a moment after it is
        stored, so the first apply after it can be judged by the old binding."""
        time.sleep(1.0)  # wall time: the apiserver's informers, not virtual time, carry the change
        due = self.cluster.clock.now + unit.retry_after
        self.cluster.wait(lambda: self.cluster.clock.now >= due, HEALTH_TIMEOUT, f"{unit.name}: the retry")

    # --- the entry objects the runbook reads ------------------------------------------------------

    def _entry(self, wave: EngineWave, revision: str, phase: str) -> None:
        """The entry objects applied (what the root Application or `flux-entry` syncs) and their
        status as the engine writes it; SyncFailed when the apiserver refuses them."""
        objects = [o for o in wave.entry if o["kind"] in _ENGINE_KINDS]
        if not objects:
            return
        try:
            self.cluster.apply(objects, "rehearsal-engine-entry")
            self._entry_status(objects, revision, phase)
        except ApplyFailed as exc:
            raise SyncFailed(f"the entry of {wave.wave}: {exc}") from None
        self.revision = revision

    def _entry_status(self, objects: list[Obj], revision: str, phase: str) -> None:
        if self.name == "argocd":
            for obj in objects:
                if obj["kind"] != "Application":
                    continue
                succeeded = phase == "Succeeded"
                source = {
                    "path": obj["spec"].get("source", {}).get("path", ""),
                    "repoURL": obj["spec"].get("source", {}).get("repoURL", ""),
                }
                status = {
                    "sync": {"status": "Synced" if succeeded else "OutOfSync", "revision": revision},
                    "health": {"status": "Healthy" if succeeded else "Progressing"},
                    "operationState": {
                        "operation": {"sync": {"revision": revision}},
                        "phase": phase.split(":")[0],
                        "message": phase,
                        "startedAt": _NOW,
                        "syncResult": {"revision": revision, "source": source},
                    },
                }
                self._status(obj, status)
        else:
            for obj in objects:
                if obj["kind"] == "Kustomization" and phase != "Succeeded":
                    self._status(
                        obj,
                        {
                            "conditions": [_condition("False", "Progressing", phase)],
                            "lastAttemptedRevision": revision,
                        },
                    )

    def _kustomization_ready(self, name: str) -> None:
        revision = getattr(self, "revision", "")
        obj = {
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
            "kind": "Kustomization",
            "metadata": {"name": name, "namespace": "flux-system"},
        }
        ready = _condition("True", "ReconciliationSucceeded", f"Applied revision: {revision}")
        self._status(
            obj, {"conditions": [ready], "lastAppliedRevision": revision, "lastAttemptedRevision": revision}
        )

    def _status(self, obj: Obj, status: Obj) -> None:
        """Write an entry object's status as its controller does: observed at its current generation,
        through the status subresource where its CRD serves one (Flux's), else with the object (Argo
        CD's Application CRD has none: argo-cd manifests/crds/application-crd.yaml)."""
        meta = obj["metadata"]
        client = self.cluster.client
        try:
            resource = client.resource(obj["apiVersion"], obj["kind"])
        except ApiError:
            return  # its CRD is not installed: there is no object to write
        live = client.get(obj["kind"], meta["name"], meta.get("namespace", ""), api_version=obj["apiVersion"])
        if live is None:
            return
        if (
            self.name == "flux"
        ):  # Flux's status records the generation it saw; an Application's has no such field
            generation = live["metadata"].get("generation", 1)
            status = {**status, "observedGeneration": generation}
            for condition in status.get("conditions") or []:
                condition["observedGeneration"] = generation
        body = {
            "apiVersion": obj["apiVersion"],
            "kind": obj["kind"],
            "metadata": {"name": meta["name"], "namespace": meta.get("namespace", "")},
            "status": status,
        }
        try:
            client.apply(
                obj["kind"],
                body,
                "rehearsal-engine-status",
                status="status" in resource.subresources,
                api_version=obj["apiVersion"],
            )
        except ApiError as exc:
            raise ApplyFailed(f"the status of {obj['kind']} {meta['name']}: {exc.message}") from None


_NOW = "2026-01-01T00:00:00Z"


def _condition(status: str, reason: str, message: str) -> Obj:
    return {
        "type": "Ready",
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
