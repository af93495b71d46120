"""Argo CD: the parent Application's sync, its hooks and waves, prune, retry, selfHeal, child apps.

- argoproj/gitops-engine v0.7.3 `pkg/sync/sync_context.go`, `sync_tasks.go`: tasks run by phase
  (PreSync, Sync, PostSync), then sync-wave, then kind; each wave must be healthy before the next;
  a failed hook fails the sync and nothing after it runs; with `PruneLast` the prunes move to a
  wave after the last one, otherwise a pruned object goes in the wave of its live annotation; a
  hook with `BeforeHookCreation` is deleted and recreated on every sync attempt; server-side apply
  uses the field manager `argocd-controller`.
- argoproj/argo-cd v3.5.1 `controller/appcontroller.go`: a failed automated sync is retried
  `syncPolicy.retry.limit` times (5 when unset; a negative limit retries for ever) with backoff
  (5 s doubling up to 3 min by default), and never again for the same commit after that
  (`alreadyAttemptedSync`); `selfHeal` re-syncs an object that drifted from Git. Argo CD does not
  assess a child Application's health by default, so the parent moves on as soon as the child
  Application object is applied; deleting a child without `resources-finalizer.argocd.argoproj.io`
  leaves its resources running, orphaned.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from gpuplatform.plan.sync_order import SYNC_UNITS
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
from gpuplatform.simulate.jobs import job_order as _job_order
from gpuplatform.simulate.jobs import job_status
from gpuplatform.simulate.rendered import ARGO_HOOK, ARGO_OPTIONS, ARGO_WAVE, EngineWave, ReleaseSpec, Unit
from gpuplatform.simulate.world import World

__all__ = ["ArgoEngine", "out_of_sync"]

MANAGER = "argocd-controller"
_HOOK_UNITS = {"PreSync": "gates-pre", "PostSync": "gates-post"}
_SYNC_WAVE_UNITS = {u.argo_wave: u.id for u in SYNC_UNITS if u.argo_hook in ("", "Sync")}


ARGO_COMPARE = "argocd.argoproj.io/compare-options"


def _options(obj: Obj, key: str) -> set[str]:
    """The comma-separated options of an annotation (gitops-engine `HasAnnotationOption` trims each)."""
    return {o.strip() for o in (obj["metadata"].get("annotations") or {}).get(key, "").split(",")}


def _no_prune(obj: Obj) -> bool:
    return "Prune=false" in _options(obj, ARGO_OPTIONS)


def out_of_sync(live: Iterable[Obj], target: Iterable[Obj]) -> list[Obj]:
    """Live objects that keep an Application OutOfSync after a sync that succeeded: Git no longer
    holds them, Argo CD does not prune them (`Prune=false`), and they lack `IgnoreExtraneous`
    (argo-cd v3.5.1 controller/state.go `CompareAppState`: an object that needs pruning counts
    unless the live object carries that compare option). With automated self-heal the Application
    is then synced again and again, for ever."""
    wanted = {object_key(o) for o in target}
    return [
        o
        for o in live
        if object_key(o) not in wanted
        and _no_prune(o)
        and "IgnoreExtraneous" not in _options(o, ARGO_COMPARE)
    ]


@dataclass
class ArgoEngine:
    """What the parent Application tracks between syncs, and the child Applications it created."""

    tracked: dict[str, Obj] = field(default_factory=dict)
    children: dict[str, ReleaseSpec] = field(default_factory=dict)
    by_hand: dict[str, Obj] = field(default_factory=dict)
    """Child Applications of a remote cluster's `<platform>-apps`, by name."""
    name: str = "argocd"

    def _child(self, world: World, obj: Obj, wave: EngineWave) -> tuple[str, str]:
        spec = wave.releases[obj["metadata"]["name"]]
        self.children[obj["metadata"]["name"]] = spec
        error = install_release(world, spec, "argocd")
        return (
            f"child Application {obj['metadata']['name']} syncs {spec.chart} {spec.version}"
            + (f": failed, {error}" if error else ""),
            error,
        )

    def _prune(self, world: World, obj: Obj) -> str:
        if obj["kind"] == "Application":
            spec = self.children.pop(obj["metadata"]["name"], None)
            if spec is None:
                return ""
            if spec.finalizer:
                uninstall_release(world, spec.chart)
                return f"child Application {obj['metadata']['name']} deleted with its resources"
            release = world.cluster.releases.get(RELEASE_KEYS.get(spec.chart, spec.chart))
            if release is not None:
                release.owner = ""
            return f"child Application {obj['metadata']['name']} deleted without a resources finalizer: its release is orphaned"
        return delete_object(world, obj)

    def _wave(self, world: World, unit: Unit, wave: EngineWave, prunes: list[Obj]) -> list[str]:
        failures: list[str] = []
        done: list[str] = []
        nodes = [o for o in unit.objects if o["kind"] == "Node" and not unit.hook]
        done += apply_nodes(world, nodes, MANAGER) if nodes else []
        self.tracked.update((object_key(o), o) for o in nodes)
        for obj in sorted(unit.objects, key=_job_order):
            kind, meta = obj["kind"], obj["metadata"]
            if kind == "Node":
                continue
            if kind == "Job":
                key = f"{meta.get('namespace', '')}/{meta['name']}"
                hook = (meta.get("annotations") or {}).get(ARGO_HOOK)
                if hook or key not in world.cluster.jobs or world.cluster.jobs[key].startswith("waiting"):
                    what = "(hook, recreated)" if hook else "created"
                    world.record("argocd", f"{unit.name}: Job {meta['name']} {what}")
                    world.cluster.jobs[key] = job_status(world, obj)
                if world.cluster.jobs[key] != "complete":
                    failures.append(f"Job {meta['name']} {world.cluster.jobs[key]}")
                if not hook:
                    self.tracked[object_key(obj)] = obj
                continue
            if kind == "Application":
                text, _error = self._child(world, obj, wave)
                done.append(text)
            else:
                text = apply_object(world, obj, MANAGER)
                if text:
                    done.append(text)
            self.tracked[object_key(obj)] = obj
        for obj in prunes:
            text = self._prune(world, obj)
            self.tracked.pop(object_key(obj), None)
            if text:
                done.append(text)
        world.record("argocd", f"{unit.name}: {'; '.join(done) or 'no change'}")
        return failures

    def sync(self, world: World, wave: EngineWave, done: Callable[[str], None] = lambda unit: None) -> str:
        """One sync attempt of the parent Application; '' when it succeeded.

        `done` is told the sync unit (`SYNC_UNITS` id) of each hook phase or sync-wave completed.
        """
        target = {object_key(o) for u in wave.units if not u.hook for o in u.objects}
        stale = [o for k, o in sorted(self.tracked.items()) if k not in target and not _no_prune(o)]
        if stale and not wave.prune:  # gitops-engine: no prune -> OutOfSync, left in place, sync succeeds
            world.record(
                "argocd",
                f"automated.prune is false: {len(stale)} object(s) no longer in Git are left in place",
            )
            stale = []
        waves = sorted({u.wave for u in wave.units if not u.hook}) or [0]
        by_wave: dict[int, list[Obj]] = {}
        for obj in stale:
            live = int((obj["metadata"].get("annotations") or {}).get(ARGO_WAVE, "0"))
            home = waves[-1] + 1 if wave.prune_last else next((w for w in waves if w >= live), waves[-1])
            by_wave.setdefault(home, []).append(obj)
        for unit in wave.units:
            prunes = [] if unit.hook else by_wave.pop(unit.wave, [])
            failures = self._wave(world, unit, wave, prunes)
            world.settle_unit()
            if failures:
                world.record("argocd", f"sync failed at {unit.name}: {'; '.join(failures)}")
                return f"sync failed at {unit.name} ({'; '.join(failures)})"
            if unit.hook or unit.wave in _SYNC_WAVE_UNITS:
                done(_HOOK_UNITS.get(unit.hook) or _SYNC_WAVE_UNITS[unit.wave])
            if not unit.hook and unit.wave == waves[-1] and by_wave:
                rest = [o for objs in by_wave.values() for o in objs]
                by_wave.clear()
                self._wave(world, Unit(f"prune (wave {waves[-1] + 1}, PruneLast)", []), wave, rest)
                world.settle()
        return ""

    def sync_by_hand(self, world: World, wave: EngineWave, commands: tuple[str, ...]) -> None:
        """The runbook's commands for `<platform>-apps`: `argocd app sync` (pruning only with
        `--prune`, otherwise the stale child Application is skipped and the sync still succeeds),
        then each `kubectl wait --for=delete application/NAME`, which times out while NAME exists."""
        sync, *waits = commands
        prune = "--prune" in sync.split()
        wanted = {o["metadata"]["name"]: o for o in wave.by_hand if o["kind"] == "Application"}
        done = []
        for name in [n for n in self.children if n not in wanted and self.by_hand.get(n)]:
            if prune:
                done.append(self._prune(world, self.by_hand.pop(name)))
            else:
                done.append(f"child Application {name}: PruneSkipped, ignored (requires pruning)")
        for name, obj in sorted(wanted.items()):
            done.append(self._child(world, obj, wave)[0])
            self.by_hand[name] = obj
        world.record("operator", f"{sync}: {'; '.join(done) or 'no change'}; sync succeeded")
        world.settle()
        for wait in waits:
            name = wait.split("application/", 1)[1].split()[0]
            if name in self.by_hand:
                world.record("operator", f"{wait}: timed out")
                world.fail(
                    "argocd-apps",
                    f"child Application {name} still exists after `{sync}`: the wave's rollback left it installed",
                    [f"Application/{name}"],
                )
            world.record("operator", f"{wait}: deleted")

    def retry(self, world: World, wave: EngineWave, done: Callable[[str], None] = lambda unit: None) -> str:
        """A retry attempt: the whole sync again, hooks recreated."""
        return self.sync(world, wave, done)

    def out_of_sync(self, wave: EngineWave) -> list[Obj]:
        """What keeps the Application OutOfSync once `wave` has synced (`out_of_sync`)."""
        target = [o for u in wave.units if not u.hook for o in u.objects]
        return out_of_sync([o for _, o in sorted(self.tracked.items())], target)

    def fork(self) -> ArgoEngine:
        """A copy of what the Application tracks (the objects themselves are shared)."""
        return ArgoEngine(dict(self.tracked), dict(self.children), dict(self.by_hand))

    def correct_drift(self, world: World) -> list[str]:
        """selfHeal: Node labels this Application owns are written back when another manager changed them."""
        return restore_node_labels(world, MANAGER)
