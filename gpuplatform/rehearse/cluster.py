"""The rehearsal cluster: the control plane, the emulated node agents and GPU stack, the clock, and
the loop that keeps them reacting while the engine and the runbook act.

The loop makes one pass of every emulated controller, then lets virtual time move when nothing
changed for two passes (no write of its own, the store's revision unchanged), every running
program sleeps, and someone waits: the engine for a unit's health, the runbook for a command. An
engine between two units waits for nothing (a dependent reconciles as soon as its dependency is
ready, the worst case of Flux's requeue and Argo CD's next wave), so no time passes then, and a
race that lasts seconds on a real cluster (a device plugin back before the kubelet wiped a stopped
driver's slices) is not jumped over. `wait` is how the engine and the runbook wait: for a
condition, within virtual seconds, and never longer than `STALL` wall seconds without any change
in the cluster.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gpuplatform.output.yaml import dump_documents
from gpuplatform.plan.waves import Plan
from gpuplatform.rehearse.assets import Assets
from gpuplatform.rehearse.client import ApiError, Client, Obj
from gpuplatform.rehearse.clock import Clock, write_shims
from gpuplatform.rehearse.controlplane import ControlPlane
from gpuplatform.rehearse.fleet import FleetNode, fleet_nodes, system_node
from gpuplatform.rehearse.kubelet import Agents, Allocators
from gpuplatform.rehearse.pods import NVIDIA_SMI, PodLauncher
from gpuplatform.rehearse.runtime import Runtime
from gpuplatform.rehearse.stack import GpuStack
from gpuplatform.versions import cluster_gates

__all__ = ["STALL", "Rehearsal", "WaitFailed"]

#: Wall seconds a wait tolerates with no change at all in the cluster and no virtual time passing.
STALL = 45.0
#: Wall seconds a new CRD's kinds may take to be served (`serve`).
_SERVED = 60.0
#: Virtual seconds time moves at most at once: a controller a little slow to react (a Job's next pod,
#: a pod the scheduler has not bound yet) is never jumped over by a long sleep.
MAX_STEP = 10.0
#: Wall seconds a program pod that has appeared may take to start before time moves without it.
STARTING = 3.0
#: Passes of the agents' loop (two each) the store must stay unchanged for the cluster to be at rest.
QUIET = 3
_PASS = 0.05


class WaitFailed(Exception):
    """A wait ran out of virtual time, or the cluster stopped changing."""


def _link(source: str, folder: Path, name: str) -> None:
    target = folder / name
    try:
        target.hardlink_to(source)
    except OSError:
        shutil.copy2(source, target)


@dataclass
class Rehearsal:
    """One control plane with the fleet of `plan` registered and its agents running."""

    plan: Plan
    assets: Assets
    keep: bool = False
    nodes: Sequence[FleetNode] = ()
    folder: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="gpuplatform-rehearse-")))
    errors: list[str] = field(default_factory=list)
    pending: list[Callable[[], str]] = field(default_factory=list)
    """Controllers that act in wall time beside the store (Kueue's manager): each says what it has
    yet to decide ('' for nothing). The cluster is not at rest, and time does not move, until none has."""
    controllers: list[Callable[[], bool]] = field(default_factory=list)
    """Emulated operators of the teams' workloads (the NIM Operator): one pass each, True when it wrote."""

    def __post_init__(self) -> None:
        declared = dict(self.plan.platform.kubernetes.feature_gates)
        gates = cluster_gates(declared, self.assets.release.minor)
        self.control = ControlPlane(self.assets, gates, folder=self.folder / "control-plane", keep=True)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._waiters = 0
        self._waiters_lock = threading.Lock()
        self.kubectl_binary = self.assets.kubectl or shutil.which("kubectl") or "kubectl"

    # --- life ------------------------------------------------------------------------------------

    def __enter__(self) -> Rehearsal:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        (self.folder / "control-plane").mkdir(parents=True, exist_ok=True)
        try:
            self.control.start()
            self.client = Client(self.control.server, self.control.token, self.control.ca_file)
            bin_dir = self.folder / "bin"
            write_shims(bin_dir)
            (bin_dir / "nvidia-smi").write_text(NVIDIA_SMI)
            (bin_dir / "nvidia-smi").chmod(0o755)
            _link(self.kubectl_binary, bin_dir, "kubectl")
            self.clock = Clock(self.folder / "clock")
            self.runtime = Runtime(self.folder / "containers", bin_dir, self.folder / "clock")
            self.launcher = PodLauncher(
                self.client,
                self.runtime,
                self.folder / "pods",
                int(self.control.server.rsplit(":", 1)[1]),
                self.control.folder / "server.crt" if self.control.folder else Path(),
                self.control.folder / "server.key" if self.control.folder else Path(),
            )
            self.stack = GpuStack(self.client, self.plan)
            allocators = Allocators(
                self.stack.operator_namespace,
                self.stack.driver_namespace,
                self.stack.mig_strategy,
                self.stack.driver_release,
            )
            self.agents = Agents(self.client, self.clock, self.launcher, (), allocators)
            for node in [*(self.nodes or fleet_nodes(self.plan)), system_node()]:
                self.agents.register(node)
            self._thread = threading.Thread(target=self._loop, name="rehearsal-agents", daemon=True)
            self._thread.start()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if hasattr(self, "runtime"):
            self.runtime.stop_all()
        if hasattr(self, "clock"):
            self.clock.stop()
        if hasattr(self, "agents"):
            self.agents.server.stop()
        self.control.stop()
        if not self.keep:
            shutil.rmtree(self.folder, ignore_errors=True)

    # --- the loop ---------------------------------------------------------------------------------

    def _loop(self) -> None:
        quiet, last = 0, ""
        while not self._stop.is_set():
            try:
                with self.client.pinned(last):  # a store unchanged since the last pass is not listed again
                    wrote = self.stack.reconcile()
                    wrote |= self.agents.reconcile()
                    for controller in self.controllers:
                        wrote |= controller()
                revision = self.client.revision()
            except Exception:  # the loop reports; the main thread stops the rehearsal
                self.errors.append(traceback.format_exc())
                time.sleep(0.5)
                continue
            quiet = quiet + 1 if not wrote and revision == last else 0
            last = revision
            starting = self.agents.about_to_start(STARTING)
            running = self.programs_running()
            if (
                quiet >= 2
                and not starting
                and self._waiters
                and not self.undecided()
                and self.clock.advance(running, step=MAX_STEP, idle=not running)
            ):
                quiet = 0
            time.sleep(_PASS)

    def undecided(self) -> str:
        """What a controller of `pending` has yet to decide ('' when none has anything)."""
        for pending in self.pending:
            if what := pending():
                return what
        return ""

    def programs_running(self) -> set[str]:
        """Program pods time waits for: every running one but the servers, which never sleep on the clock."""
        return self.runtime.running() - self.launcher.serving()

    def check(self) -> None:
        """RuntimeError when the loop or the control plane failed."""
        self.control.check_alive()
        if self.errors:
            raise RuntimeError(f"the rehearsal's controllers failed:\n{self.errors[0]}")

    @contextmanager
    def waiting(self) -> Iterator[None]:
        """Someone waits on the cluster: while anyone does, virtual time may pass."""
        with self._waiters_lock:
            self._waiters += 1
        try:
            yield
        finally:
            with self._waiters_lock:
                self._waiters -= 1

    def wait(self, holds: Callable[[], Any], seconds: float, what: str) -> Any:
        """The first truthy `holds()` within `seconds` of virtual time; WaitFailed otherwise."""
        with self.waiting():
            return self._wait(holds, seconds, what)

    def _wait(self, holds: Callable[[], Any], seconds: float, what: str) -> Any:
        deadline = self.clock.now + seconds
        last_change, seen = time.monotonic(), (self.clock.now, "")
        while True:
            self.check()
            result = holds()
            if result:
                return result
            if self.clock.now >= deadline:
                raise WaitFailed(f"{what}: not within {seconds:.0f} s")
            now = (self.clock.now, self.client.revision())
            if now != seen:
                seen, last_change = now, time.monotonic()
            elif time.monotonic() - last_change > STALL:
                raise WaitFailed(f"{what}: the cluster stopped changing")
            time.sleep(_PASS)

    def settle(self) -> None:
        """Let the cluster come to rest: the store unchanged over `QUIET` passes of the agents' loop
        and nothing `pending` (never longer than `STALL` wall seconds)."""
        last, quiet = self.client.revision(), 0
        started = time.monotonic()
        while quiet < QUIET and time.monotonic() - started < STALL:
            self.check()
            time.sleep(_PASS * 2)
            revision = self.client.revision()
            quiet = quiet + 1 if revision == last and not self.undecided() else 0
            last = revision

    # --- acting on the API -----------------------------------------------------------------------

    def kubeconfig(self) -> Path:
        return self.control.kubeconfig

    def kubectl(
        self, args: Sequence[str], *, stdin: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """The real kubectl as the rehearsal's admin."""
        return subprocess.run(
            [self.kubectl_binary, f"--kubeconfig={self.kubeconfig()}", *args],
            input=stdin,
            capture_output=True,
            text=True,
            check=check,
            timeout=300,
        )

    def apply(self, objects: Iterable[Obj], manager: str) -> str:
        """Server-side apply of `objects` with the real kubectl as field manager `manager`; its output."""
        documents = list(objects)
        if not documents:
            return ""
        out = self.kubectl(
            ["apply", "--server-side", "--force-conflicts", f"--field-manager={manager}", "-f", "-"],
            stdin=dump_documents(documents),
            check=False,
        )
        if out.returncode != 0:
            raise ApplyFailed(out.stderr.strip() or out.stdout.strip())
        return out.stdout

    def serve(self, crds: list[Obj], kinds: Sequence[str], manager: str) -> None:
        """Apply `crds` and wait until each of `kinds` (the client's) lists, as a controller's informers
        wait for their caches. The apiserver serves a new CRD's storage in wall time, a little after
        it is Established (429 until then), so this waits in wall time, never longer than `_SERVED`."""
        self.apply(crds, manager)
        deadline = time.monotonic() + _SERVED
        while True:
            try:
                for kind in kinds:
                    self.client.list(kind)
                return
            except ApiError as exc:
                if time.monotonic() > deadline:
                    raise WaitFailed(
                        f"{', '.join(kinds)} served: not within {_SERVED:.0f} s: {exc}"
                    ) from None
                time.sleep(0.2)

    def get(self, kind: str, name: str, namespace: str = "") -> Obj | None:
        """Any kind by kubectl (the client knows only the kinds the agents use)."""
        args = ["get", kind, name, "-o", "json"] + (["-n", namespace] if namespace else [])
        out = self.kubectl(args, check=False)
        if out.returncode != 0:
            return None
        found: Obj = yaml.safe_load(out.stdout)
        return found

    def delete(
        self, kind: str, name: str, namespace: str = "", *, api_version: str = "", wait: bool = False
    ) -> None:
        """Delete as `kubectl delete --ignore-not-found` does: its dependents in the background (kubectl's
        default cascade, where a batch/v1 Job's own default orphans its pods); `wait`: until it is gone,
        as `--wait` does (wall time: what removes it is a controller, not a sleeping program). A kind
        the client's table lacks needs its `api_version`."""
        try:
            self.client.delete(kind, name, namespace, api_version=api_version, propagation="Background")
        except ApiError:
            return  # as the kubectl it replaces: a refused delete leaves the object, the invariants judge
        started = time.monotonic()
        while wait and time.monotonic() - started < STALL:
            if self.client.get(kind, name, namespace, api_version=api_version) is None:
                return
            time.sleep(_PASS)


class ApplyFailed(Exception):
    """kubectl refused to apply: the apiserver's words."""
