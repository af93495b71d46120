"""Walk a platform's waves on a rehearsal cluster: the runbook's steps as written, the merge, the
engine's sync of the tree, the owners' moves, with the invariants read after every step.

The cluster starts as the running cluster before the migration (the GPU Operator with its values,
the nodes labelled, the unmigrated workloads running), adopts the first wave, walks every wave
forward and then back, one adjacent transition at a time: a jump over waves has no runbook of its
own, and a step the runbook lacks does not happen. After a violation the cluster is what it is, so
the transitions after it are listed as not rehearsed, with the reason.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from gpuplatform.kueue.runbook import KUEUE_OWNER
from gpuplatform.plan.steps import Step, transition_steps
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.rehearse.cluster import Rehearsal, WaitFailed
from gpuplatform.rehearse.crds import crds_for
from gpuplatform.rehearse.engines import Engine, SyncFailed
from gpuplatform.rehearse.fakes import install_fakes
from gpuplatform.rehearse.gke import install_gke, operator_env
from gpuplatform.rehearse.invariants import check_state, workload_name
from gpuplatform.rehearse.karpenter import install_karpenter
from gpuplatform.rehearse.kueue import configure_kueue, install_kueue, team_queues
from gpuplatform.rehearse.nim import NimOwners, install_nim_operator
from gpuplatform.rehearse.runbook import Block, Item, RunbookSection, read_section
from gpuplatform.rehearse.sensitivity import blind_gates
from gpuplatform.rehearse.workloads import Owners
from gpuplatform.render.argocd_settings import INSTALLED_FROM_MANIFESTS
from gpuplatform.render.flux_entry import flux_source
from gpuplatform.render.kustomize_paths import built_objects
from gpuplatform.render.tree import Tree
from gpuplatform.simulate.rendered import EntryTrees, engine_wave
from gpuplatform.simulate.replay import TransitionResult
from gpuplatform.simulate.world import StepRecord, Violation, ViolationFound

__all__ = ["Walker"]

_OTHER_ENGINE = {
    "flux": ("argocd ", "-n argocd", "--namespace argocd", "--namespace=argocd"),
    "argocd": ("flux ", "-n flux-system", "--namespace flux-system", "--namespace=flux-system"),
}
#: The runbook's alternatives ("If ...") that describe the rehearsal's cluster; the others are skipped.
_HOLDS = (INSTALLED_FROM_MANIFESTS,)
#: Virtual seconds a late operator lets the sync run on its own before doing the runbook's steps.
STUCK = 120.0
#: Wall seconds one runbook command may take (a `kubectl wait` of the engine included).
COMMAND_TIMEOUT = 120


@dataclass
class Walker:
    """One engine's walk over one platform on one rehearsal cluster."""

    cluster: Rehearsal
    plan: Plan
    tree: Tree
    tree_dir: Path
    """The platform's rendered folder as it will be applied (`dist/<platform>` or `--tree`)."""
    engine_name: str
    stack: str
    """The stack path the runbook's `<stack>` stands for."""
    crds: dict[tuple[str, str], dict[str, object]] = field(default_factory=dict)
    snapshots: Path | None = None
    """`--write-snapshots`: where `gpuplatform snapshot` writes the settled cluster (`_snapshot`)."""
    manifests: Mapping[str, str] = field(default_factory=dict)
    """The teams' own manifests the spec names (`LoadedPlatform.manifests`): what runs before the migration."""
    trace: list[StepRecord] = field(default_factory=list)
    notes: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.engine = Engine(self.cluster, self.engine_name, self.plan.platform.name)
        self.owners = Owners(self.cluster, self.plan, self.manifests)
        self.nim_owners = NimOwners(self.cluster, self.plan, self.tree, self.manifests)
        self.work = self.cluster.folder / "operator"
        self.cwd = self.work / "tree"
        shutil.copytree(self.tree_dir, self.cwd)
        self.fakes = self.work / "bin"
        install_fakes(self.fakes, self.work / "state")
        self.cluster.stack.helm_state = self.work / "state" / "helm"
        self._entries = EntryTrees(self.tree, self.plan)
        self._lock = threading.Lock()
        self._merges = 0
        self._snapshots_written = 0
        self._sensed: set[str] = set()
        self.moving: set[str] = set()
        self.declared_state: WaveState = self.plan.waves[0]

    # --- recording and judging ------------------------------------------------------------------

    def record(self, actor: str, text: str, *, check: bool = True) -> None:
        """A step happened: record it, let the cluster settle, read every invariant."""
        with self._lock:
            step = StepRecord(len(self.trace) + 1, actor, text)
            self.trace.append(step)
        if not check:
            return
        self.cluster.settle()
        declared = self.owners.declared(self.declared_state) + self.nim_owners.declared(self.declared_state)
        findings = check_state(self.cluster, declared, self.moving)
        if findings:
            first = findings[0]
            raise ViolationFound(Violation(step, first.invariant, first.message, first.objects))

    def fail(self, invariant: str, message: str, objects: tuple[str, ...] = ()) -> None:
        step = self.trace[-1] if self.trace else StepRecord(0, "rehearsal", "start")
        raise ViolationFound(Violation(step, invariant, message, objects))

    # --- the start --------------------------------------------------------------------------------

    def bootstrap(self) -> TransitionResult:
        """The running cluster adopts the first wave (after the first runbook's steps, if any)."""
        first = self.plan.waves[0]
        result = TransitionResult(self.engine_name, first.name, first.name)
        try:
            self._prepare_cluster(first)
            runbook = self._runbook(first.dir_name)
            section = read_section(runbook, "Before the merge") if runbook else None
            for item in section.before if section else []:
                self._item(item, first, first, [])
            self._merge(first, first, None)
            self.record(
                "owners",
                "tenants run their claim workloads: " + "; ".join(self.owners.tenants_deploy(first))
                or "none",
            )
            self._snapshot(f"adopt-{first.name}")
        except ViolationFound as exc:
            result.violation = exc.violation
            result.tail = self.trace[-8:-1]
        result.steps = len(self.trace)
        return result

    def _prepare_cluster(self, first: WaveState) -> None:
        objects = [
            o
            for path, content in self.tree.files.items()
            if isinstance(content, list)
            and path.startswith(("waves/", "delivery/"))
            and not path.endswith("kustomization.yaml")
            for o in content
        ]
        self.cluster.apply(crds_for(objects, self.crds), "rehearsal-setup")
        # The apiserver establishes a CRD in wall time, unseen by the store's revision, so this waits
        # in wall time, not on the virtual clock (which moves while the store is quiet). A CRD with
        # no conditions yet fails `kubectl wait` at once: it is asked again.
        deadline = time.monotonic() + 60
        while (
            waited := self.cluster.kubectl(
                ["wait", "--for=condition=Established", "crd", "--all", "--timeout=5s"], check=False
            )
        ).returncode != 0:
            if time.monotonic() > deadline:
                raise WaitFailed(f"the CRDs established: not within 60 s: {waited.stderr.strip()}")
            time.sleep(0.2)
        d = self.plan.platform.delivery
        namespace = d.flux_namespace if self.engine_name == "flux" else d.argocd_namespace
        setup: list[dict[str, object]] = [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        ]
        if (
            self.engine_name == "flux"
        ):  # what `flux bootstrap` created: the repository the Kustomizations read
            source = {
                "url": "ssh://git@git.example.com/platform/fleet",
                "interval": "1m",
                "ref": {"branch": d.revision},
            }
            meta = {"name": flux_source(self.plan), "namespace": namespace}
            setup.append(
                {
                    "apiVersion": "source.toolkit.fluxcd.io/v1",
                    "kind": "GitRepository",
                    "metadata": meta,
                    "spec": source,
                }
            )
        if self.engine_name == "argocd":
            # an Argo CD set up as docs/delivery.md asks: Helm charts through kustomize (GP293)
            data = {"kustomize.buildOptions": "--enable-helm"}
            setup.append(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "argocd-cm", "namespace": "argocd"},
                    "data": data,
                }
            )
        monitoring = self.plan.platform.monitoring
        if monitoring.enabled:
            # the Prometheus Operator's namespace, where the post gates' PrometheusRule goes: the
            # operator's install creates it (its CRD comes with the others, above)
            setup.append(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": monitoring.namespace}}
            )
        self.cluster.apply(setup, "rehearsal-setup")
        if self.plan.platform.kueue is not None:
            install_kueue(self.cluster, self.plan.platform.kueue)
            first_wave = [
                o
                for path, content in self.tree.files.items()
                if isinstance(content, list) and path.startswith(f"waves/{first.dir_name}/")
                for o in content
            ]
            self.cluster.apply(team_queues(first_wave), "kueue-owner")
            self.record(
                "cluster",
                f"Kueue {self.plan.platform.kueue.version} installed from its release, its manager Ready, "
                "the team's queues in place",
                check=False,
            )
        if self.plan.platform.nim_services:
            install_nim_operator(self.cluster)
            self.record(
                "cluster",
                "the NIM Operator (emulated) runs: "
                + ("; ".join(self.nim_owners.start()) or "no service replaced"),
                check=False,
            )
        if nodepools := install_karpenter(self.cluster, self.plan, self.crds):
            self.record(
                "cluster",
                f"Karpenter (emulated) runs: NodePool(s) {', '.join(nodepools)}, a NodeClaim per node",
                check=False,
            )
        if gke_pools := install_gke(self.cluster, self.plan, self.work / "state" / "gke"):
            self.record(
                "cluster",
                f"GKE (emulated) runs: node pool(s) {', '.join(gke_pools)}, their nodes registered",
                check=False,
            )
        self.owners.start()
        self.record(
            "cluster",
            f"the running cluster: {len(self.cluster.agents.fleet)} GPU node(s), the GPU Operator, the unmigrated workloads",
        )

    # --- one transition ---------------------------------------------------------------------------

    def transition(self, a: WaveState, b: WaveState, *, late: bool = False) -> TransitionResult:
        """`a` -> `b` (adjacent) as its runbook says; `late`: the operator merges first and does the
        steps before the merge only once the sync is stuck (the blocking gates must hold it)."""
        result = TransitionResult(self.engine_name, a.name, b.name, late=late)
        self.trace = []
        try:
            forward = self.plan.waves.index(b) > self.plan.waves.index(a)
            file, heading = (
                (b.dir_name, f"From {a.dir_name} to {b.dir_name}")
                if forward
                else (a.dir_name, f"Rollback to {b.dir_name}")
            )
            text = self._runbook(file)
            section = read_section(text, heading) if text else None
            if section is None:
                self.fail("runbook", f"runbooks/{file}.md has no section `{heading}`")
                raise AssertionError  # unreachable
            self._moving(a, b)
            steps = transition_steps(self.plan, a, b)
            before = [partial(self._item, item, a, b, steps, merged=late) for item in section.before]
            if not late:
                for action in before:
                    action()
            self._merge(a, b, section, steps, late=before if late else [])
            for item in section.following:
                self._item(item, a, b, steps)
            for item in section.after:
                self._item(item, a, b, steps)
            self.declared_state = b
            deployed = self.owners.tenants_deploy(b)
            self.record("owners", "; ".join(deployed) or "tenants' claim workloads in place")
            self.moving = set()
            self.record("rehearsal", f"{a.name} -> {b.name} settled")
            self._snapshot(f"{a.name}-to-{b.name}" + ("-late" if late else ""))
            self._sensitivity(b)
        except ViolationFound as exc:
            result.violation = exc.violation
            result.tail = self.trace[-8:-1]
        result.steps = len(self.trace)
        result.notes = sorted(self.notes)
        return result

    def _sensitivity(self, wave: WaveState) -> None:
        """The first time a wave has settled: each post gate with a fault the rehearsal can make must
        not hold on it (`sensitivity.py`)."""
        if wave.name in self._sensed:
            return
        self._sensed.add(wave.name)
        for blind in blind_gates(self.cluster, self.tree, wave.dir_name):
            self.record("rehearsal", f"gate {blind.gate} run again on a fault: {blind.fault}", check=False)
            self.fail(
                "gate-blind",
                f"gate {blind.gate} (Job {blind.job}) holds on a cluster that breaks it: {blind.fault}",
                (f"Job/{blind.job}",),
            )
        self.record("rehearsal", f"the post gates of {wave.name} fail on their faults", check=False)

    def _moving(self, a: WaveState, b: WaveState) -> None:
        """Declared workloads the transition moves: on a pool that changes allocator, converting, or
        of a tenant that arrives or leaves."""
        moved_pools = {p for p in a.pool_modes if a.pool_modes[p] != b.pool_modes.get(p)}
        fleet = self.cluster.agents.fleet
        on_pools = {
            f"{p['metadata']['namespace']}/{workload_name(p)}"
            for p in self.cluster.client.list("Pod")
            if fleet.get(str(p["spec"].get("nodeName"))) is not None
            and fleet[p["spec"]["nodeName"]].pool in moved_pools
        }
        p = self.plan.platform
        converting = {
            f"{w.namespace}/{w.name}"
            for i, w in enumerate(p.workloads)
            if (i in a.workloads) != (i in b.workloads)
        }
        tenants = {t.ns for t in p.tenants if (t.name in a.tenants) != (t.name in b.tenants)}
        claims = {
            f"{o['metadata']['namespace']}/{o['metadata']['name']}"
            for o in self.owners.claim_workloads(a) + self.owners.claim_workloads(b)
            if o["metadata"]["namespace"] in tenants
        }
        self.moving = on_pools | converting | claims | self.nim_owners.moving(a, b)

    def _merge(
        self,
        a: WaveState,
        b: WaveState,
        section: RunbookSection | None,
        steps: Sequence[Step] = (),
        late: Sequence[Callable[[], None]] = (),
    ) -> None:
        """The merge and the engine's sync, the steps that wait for a unit run as it completes. With
        `late` steps, the sync runs on its own until it is stuck (`STUCK` virtual seconds without
        completing), then the operator does them while it waits; a sync that completed without them
        leaves them undone."""
        self.record("operator", f"merge: activeWave {a.name} -> {b.name}", check=False)
        wave = engine_wave(self.tree, self.plan, b.name, self.engine_name, self._entries[b.name])
        gates = built_objects(self._entries[b.name].files, "delivery/gates")
        self._merges += 1
        sha = hashlib.sha1(f"{self.plan.platform.name}/{b.name}/{self._merges}".encode()).hexdigest()
        (self.work / "state" / "merged").write_text(sha + "\n")
        revision = f"{self.plan.platform.delivery.revision}@sha1:{sha}" if self.engine_name == "flux" else sha

        operator = threading.Lock()  # one operator: the steps run one at a time, in the runbook's order
        here = not late
        deferred: list[Item] = []

        def done(unit: str) -> None:
            self.record(self.engine_name, f"{unit} applied")
            for item in section.during if section else []:
                if item.after == unit:
                    with operator:
                        if here:
                            self._item(item, a, b, steps)
                        else:  # a late operator has not started the runbook yet
                            deferred.append(item)

        self.cluster.apply(gates, "rehearsal-engine-entry")
        outcome: list[BaseException] = []

        def sync() -> None:
            try:
                self.engine.sync(wave, revision, done)
            except BaseException as exc:  # handed to the operator's thread
                outcome.append(exc)

        if not late:
            sync()
        else:
            engine = threading.Thread(target=sync, name="rehearsal-engine", daemon=True)
            merged = self.cluster.clock.now
            engine.start()
            self.cluster.wait(
                lambda: not engine.is_alive() or self.cluster.clock.now - merged >= STUCK,
                STUCK + 60,
                "the sync stuck or done",
            )
            with operator:
                if engine.is_alive() or outcome:
                    for action in late:
                        action()
                else:  # nothing held the sync: the steps before the merge are moot
                    self.notes.add(
                        f"{a.name} -> {b.name} with the operator late: the sync completed before the runbook's steps"
                    )
                here = True  # the operator goes on in order: the steps of the units already applied
                for item in deferred:
                    self._item(item, a, b, steps)
            engine.join()
        if outcome:
            exc = outcome[0]
            if isinstance(exc, SyncFailed):
                order = "the operator late" if late else "the runbook's order"
                self.fail("sync-completes", f"with {order} the sync of {b.name} does not complete: {exc}")
            raise exc
        self.record(self.engine_name, f"the sync of {b.name} completed")

    # --- the operator's steps ---------------------------------------------------------------------

    def _runbook(self, dir_name: str) -> str:
        path = self.tree_dir / "runbooks" / f"{dir_name}.md"
        return path.read_text() if path.is_file() else ""

    def _owner_action(self, item: Item, steps: Sequence[Step]) -> Step | None:
        head = item.text.lower()
        for step in steps:
            if step.kind == "manual" and step.what and head.startswith(step.what.lower()[:48]):
                return step
        return None

    def _item(
        self, item: Item, a: WaveState, b: WaveState, steps: Sequence[Step], *, merged: bool = False
    ) -> None:
        """One runbook item: the owners' part, then its blocks. `merged`: a step before the merge done
        after it (the operator late). A Job that goes back is the exception the runbook spells out:
        its block deletes the claim-using Job, then its owner creates it again from its legacy manifest."""
        step = self._owner_action(item, steps)
        restores = step is not None and step.action in ("roll-back-workloads", "restore-legacy-workloads")
        if step is not None:
            act: dict[str, Callable[[], list[str]]] = {
                "roll-back-workloads": lambda: self.owners.restore(a, b, jobs=False),
                "release-claims": lambda: self.owners.release_claims(a, b, step.pools),
                "convert-workloads": lambda: self.owners.convert(a, b),
                "restore-legacy-workloads": lambda: self.owners.restore(a, b, jobs=False),
            }
            if step.action in act:
                done = act[step.action]()
                self.record("owners", "; ".join(done) or f"{step.action}: nothing to do")
        if item.text.startswith(KUEUE_OWNER):
            self.record("owners", configure_kueue(self.cluster, self.plan, b))
        if nim := self.nim_owners.act(item.text, b):
            self.record("owners", "; ".join(nim))
        for block in item.blocks:
            self._block(block, item, merged=merged)
        if restores and (done := self.owners.restore(a, b, jobs=True)):
            self.record("owners", "; ".join(done))

    def _block(self, block: Block, item: Item, *, merged: bool = False) -> None:
        if block.text.startswith("If ") and not block.text.startswith(_HOLDS):
            return  # an alternative for a cluster unlike the rehearsal's
        script = self._script(block.script)
        if not script.strip():
            return
        try:
            out = self._operator(["sh", "-e", "-c", script])
        except subprocess.TimeoutExpired:
            self.record("runbook", script.strip())
            self.fail("runbook", f"the command did not finish in {COMMAND_TIMEOUT} s: {script.strip()}")
            return
        self.record("runbook", script.strip().splitlines()[0] + (" …" if script.strip().count("\n") else ""))
        printed = (out.stdout + out.stderr).strip()
        if out.returncode != 0:
            self.fail(
                "runbook", f"the step failed (exit {out.returncode}): {script.strip()}\n{printed[-1500:]}"
            )
        if block.expects_nothing and out.stdout.strip() and merged:
            # the check is the merge's precondition; after the merge the sync may have made it moot
            # (a legacy pod back on a pool that went back); what matters is judged by the invariants
            self.notes.add(
                f"with the operator late, a check before the merge printed after it: {out.stdout.strip()[:200]}"
            )
        elif block.expects_nothing and out.stdout.strip():
            self.fail(
                "runbook",
                f"a check that must print nothing printed: {out.stdout.strip()[:500]} ({script.strip()})",
            )

    def _operator(self, command: list[str]) -> subprocess.CompletedProcess[str]:
        """`command` run as the operator runs the runbook: in the tree, with the rehearsal's
        kubeconfig, the fakes and the product's own `gpuplatform` first on PATH; time passes."""
        env = {
            **os.environ,
            "KUBECONFIG": str(self.cluster.kubeconfig()),
            "PATH": f"{self.fakes}:{self.cluster.folder / 'bin'}:{os.environ.get('PATH', '')}",
            "CLOCK_DIR": str(self.cluster.clock.folder),
            **operator_env(self.plan.platform.name),
        }
        with self.cluster.waiting():  # the operator waits for the command: time passes
            return subprocess.run(
                command, cwd=self.cwd, env=env, capture_output=True, text=True, timeout=COMMAND_TIMEOUT
            )

    def _snapshot(self, name: str) -> None:
        """With `--write-snapshots`: `gpuplatform snapshot` of the cluster as it is now, run as the
        operator runs it, into `<platform>-<engine>-<NN>-<name>` (what `evidence` reads)."""
        if self.snapshots is None:
            return
        self._snapshots_written += 1
        platform = self.plan.platform.name
        folder = self.snapshots / f"{platform}-{self.engine_name}-{self._snapshots_written:02d}-{name}"
        try:
            out = self._operator(["gpuplatform", "snapshot", "--out", str(folder)])
        except subprocess.TimeoutExpired:
            self.fail("snapshot", f"gpuplatform snapshot did not finish in {COMMAND_TIMEOUT} s")
            return
        self.record("rehearsal", f"gpuplatform snapshot --out {folder}", check=False)
        if out.returncode != 0:
            self.fail(
                "snapshot", f"gpuplatform snapshot failed (exit {out.returncode}): {out.stderr[-1500:]}"
            )

    def _script(self, script: str) -> str:
        """The block as the operator runs it: `<stack>` filled in, the other engine's lines left out."""
        lines = []
        for line in script.replace("<stack>", self.stack).splitlines():
            if any(marker in line for marker in _OTHER_ENGINE[self.engine_name]):
                continue
            lines.append(line)
        return "\n".join(lines) + "\n"
