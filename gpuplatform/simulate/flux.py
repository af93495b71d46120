"""Flux: one Kustomization per layer, chained by `dependsOn`, each applying, pruning and waiting.

- fluxcd/kustomize-controller v1.9.4 `internal/controller/kustomization_controller.go`: a
  Kustomization waits for its dependencies to be Ready at the source revision
  (`checkDependencies`); it applies with server-side apply as field manager `kustomize-controller`,
  deletes the objects of its previous inventory it no longer builds (`prune`, skipping
  `kustomize.toolkit.fluxcd.io/prune: disabled`), then waits for health (`wait: true`; a failed Job
  fails it, a Job still running keeps it not Ready until it completes), and on failure reconciles
  again after `retryInterval`.
- fluxcd/pkg ssa v0.76 `manager_apply.go` `Apply`: an object that has not drifted is not applied
  again, and a Job is immutable, so an unchanged failed Job stays failed on every retry; only a Job
  that retries by itself (`podFailurePolicy` Ignore) or is renamed runs again. Each reconcile
  re-applies the Kustomization's objects, so a label it owns that another manager changed is
  written back at the next interval (drift correction); when that happens is not modelled, so it is
  taken to happen at the worst moment.
- fluxcd/helm-controller v1.6.3: a HelmRelease installs or upgrades the chart with its values and
  `postRenderers`; deleting it uninstalls the release (its finalizer, `reconcileReleaseDeletion`);
  a DRA driver upgrade whose kubelet plugin rollout outlasts `spec.timeout` fails and is retried,
  left failed or rolled back as its policy says (`helm_rollout.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from gpuplatform.plan.sync_order import unit_of_folder
from gpuplatform.render.meta import Obj
from gpuplatform.simulate.apply import (
    RELEASE_KEYS,
    apply_nodes,
    apply_object,
    delete_object,
    install_release,
    object_key,
    restore_node_labels,
    uninstall_release,
)
from gpuplatform.simulate.helm_rollout import driver_upgrade
from gpuplatform.simulate.jobs import job_order as _job_order
from gpuplatform.simulate.jobs import job_status
from gpuplatform.simulate.rendered import EngineWave, ReleaseSpec, Unit, flux_chart
from gpuplatform.simulate.world import World

__all__ = ["FluxEngine"]

MANAGER = "kustomize-controller"
PRUNE_DISABLED = "kustomize.toolkit.fluxcd.io/prune"


@dataclass
class FluxEngine:
    """The Flux controllers' memory between reconciles: each Kustomization's inventory."""

    inventory: dict[str, dict[str, Obj]] = field(default_factory=dict)
    name: str = "flux"

    def _apply(self, world: World, unit: Unit, wave: EngineWave) -> list[str]:
        failures: list[str] = []
        nodes = [o for o in unit.objects if o["kind"] == "Node"]
        changes = apply_nodes(world, nodes, MANAGER) if nodes else []
        done = []
        for obj in sorted(unit.objects, key=_job_order):
            kind, meta = obj["kind"], obj["metadata"]
            if kind == "Node":
                continue
            if kind == "HelmRelease":
                spec = wave.releases[meta["name"]]
                error = _release(world, spec, obj)
                done.append(
                    f"HelmRelease {meta['name']} {'failed: ' + error if error else 'installed/upgraded'}"
                )
                if error:
                    failures.append(f"HelmRelease {meta['name']}: {error}")
            elif kind == "Job":
                key = f"{meta.get('namespace', '')}/{meta['name']}"
                if key not in world.cluster.jobs or world.cluster.jobs[key].startswith("waiting"):
                    world.record("flux", f"Kustomization {unit.name}: Job {meta['name']} runs")
                    world.cluster.jobs[key] = job_status(world, obj)
                    world.cluster.objects[object_key(obj)] = obj
                if world.cluster.jobs[key] != "complete":
                    failures.append(f"Job {meta['name']} {world.cluster.jobs[key]}")
            else:
                text = apply_object(world, obj, MANAGER)
                if text:
                    done.append(text)
        new = {object_key(o): o for o in unit.objects}
        if unit.prune:
            done += _prune(world, self.inventory.get(unit.name, {}), new)
        self.inventory[unit.name] = new
        summary = "; ".join(changes + done) or "no change"
        world.record("flux", f"Kustomization {unit.name} applies {len(unit.objects)} object(s): {summary}")
        return failures

    def sync(self, world: World, wave: EngineWave, done: Callable[[str], None] = lambda unit: None) -> str:
        """Reconcile the chain once, in `dependsOn` order; '' when every Kustomization is Ready.

        `done` is told the sync unit (`SYNC_UNITS` id) of each Kustomization that became Ready.
        """
        self._finalize_removed(world, wave)
        for unit in wave.units:
            failures = self._apply(world, unit, wave)
            world.settle_unit()
            if unit.wait and failures:
                world.record("flux", f"Kustomization {unit.name} is not Ready: {'; '.join(failures)}")
                return (
                    f"Kustomization {unit.name} is not Ready ({'; '.join(failures)}); the ones after it wait"
                )
            if unit.folder:
                done(unit_of_folder(unit.folder).id)
        return ""

    def _finalize_removed(self, world: World, wave: EngineWave) -> None:
        """A Kustomization the entry no longer renders is deleted by the entry's own prune; its
        finalizer deletes its inventory at once, before the chain's first gate (kustomize-controller
        v1.9.4 `finalize`: `finalizerShouldDeleteResources` is `spec.prune` under the default
        `deletionPolicy: MirrorPrune`; our Kustomizations all prune)."""
        kept = {unit.name for unit in wave.units}
        for name in sorted(set(self.inventory) - kept):
            done = _prune(world, self.inventory.pop(name), {})
            world.record(
                "flux", f"Kustomization {name} deleted: its finalizer prunes {'; '.join(done) or 'nothing'}"
            )
            world.settle()

    def retry(self, world: World, wave: EngineWave, done: Callable[[str], None] = lambda unit: None) -> str:
        """The next reconciles: a Job still retrying runs a new attempt; a failed Job stays failed."""
        return self.sync(world, wave, done)

    def fork(self) -> FluxEngine:
        """A copy of the inventories (the objects themselves are shared)."""
        return FluxEngine({k: dict(v) for k, v in self.inventory.items()})

    def correct_drift(self, world: World) -> list[str]:
        """Re-apply the labels this engine owns wherever another manager changed them."""
        return restore_node_labels(world, MANAGER)


def _prune(world: World, old: dict[str, Obj], new: dict[str, Obj]) -> list[str]:
    """Delete what `old` held and `new` does not (skipping `prune: disabled`); a HelmRelease's
    deletion uninstalls its release."""
    done = []
    for key in [k for k in old if k not in new]:
        obj = old[key]
        if (obj["metadata"].get("annotations") or {}).get(PRUNE_DISABLED) == "disabled":
            continue
        if obj["kind"] == "HelmRelease":
            uninstall_release(world, wave_chart(obj, old.values()))
            done.append(f"HelmRelease {obj['metadata']['name']} deleted: helm uninstall")
        else:
            done.append(delete_object(world, obj))
    return done


def _release(world: World, spec: ReleaseSpec, obj: Obj) -> str:
    """Install or upgrade; an upgrade of the DRA driver must roll out within `spec.timeout`
    (`helm_rollout`), and a rollback remediation puts the previous release back."""
    key = RELEASE_KEYS.get(spec.chart, spec.chart)
    previous = world.cluster.releases.get(key)
    error = install_release(world, spec, "flux")
    if error or key != "dra-driver" or previous is None:
        return error
    if (previous.version, previous.values, previous.patches) == (spec.version, spec.values, spec.patches):
        return ""
    nodes = sum(len(g.nodes) for g in world.cluster.groups if g.kubelet_plugin == "running")
    outcome = driver_upgrade(obj["spec"], spec.values, nodes)
    if outcome.rolled_back:
        old = ReleaseSpec(spec.name, previous.chart, previous.version, previous.values, previous.patches)
        install_release(world, old, "flux")
    return outcome.error


def wave_chart(obj: Obj, objects: Iterable[Obj]) -> str:
    """The chart a HelmRelease installs (`chart.spec`, or the OCIRepository its `chartRef` names)."""
    return flux_chart(obj, objects)[0]
