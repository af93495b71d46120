"""A real Kubernetes control plane on loopback: etcd, kube-apiserver, kube-controller-manager and
kube-scheduler as local processes in a temporary folder, stopped on every exit.

The flags follow controller-runtime's envtest (`pkg/internal/testing/controlplane/apiserver.go`,
`etcd.go`: loopback, a throwaway etcd without fsync, service-account signing keys) with what a
migration rehearsal needs on top: RBAC authorization, the default admission chain (ResourceQuota,
ServiceAccount, ValidatingAdmissionPolicy among them) and the feature gates of the spec's release on
all three components. Left out, and why:

- `TaintNodesByCondition` admission taints every new Node `node.kubernetes.io/not-ready`, which only
  the node-lifecycle controller removes, and that controller evicts from nodes that stop sending
  heartbeats; the emulated kubelet sends none, so both are off (a Node is Ready when it registers).
- Identities: the controller-manager and the scheduler authenticate with static tokens in
  `system:masters`; the product's own identities (gate, switch, sync) are the ones RBAC decides for.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import random
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from gpuplatform.rehearse.assets import Assets
from gpuplatform.versions import KUBE_FEATURE_GATES

__all__ = [
    "CONTROLLERS",
    "ControlPlane",
    "ControlPlaneFailed",
    "die_with_parent",
    "feature_gate_flag",
    "free_ports",
]

#: What kube-controller-manager runs: the workload controllers the migration's objects need, the
#: resourceclaim controller (claims from templates), the disruption controller (PodDisruptionBudget
#: status, which the eviction API reads), taint eviction (NoExecute), quota, garbage collection
#: (owners, and pods of deleted Nodes), namespaces and service accounts, and the endpoints of
#: Services (a webhook's, which the apiserver calls through them: `--enable-aggregator-routing`,
#: since no kube-proxy routes a ClusterIP here; kube-apiserver's service resolver then reads the
#: EndpointSlices, k8s.io/kube-aggregator v0.36.3 `pkg/apiserver/resolvers.go`). Names as
#: cmd/kube-controller-manager/names/controller_names.go gives them (1.35 and 1.36).
CONTROLLERS = tuple(
    f"{name}-controller"
    for name in (
        "cronjob",
        "daemonset",
        "deployment",
        "disruption",
        "endpoints",
        "endpointslice",
        "garbage-collector",
        "job",
        "namespace",
        "pod-garbage-collector",
        "replicaset",
        "resourceclaim",
        "resourcequota",
        "root-ca-certificate-publisher",
        "serviceaccount",
        "statefulset",
        "taint-eviction",
    )
)
_DISABLED_ADMISSION = ("TaintNodesByCondition",)
_READY_TIMEOUT = 60.0
_PR_SET_PDEATHSIG = 1


class ControlPlaneFailed(Exception):
    """A component did not start; the message carries the end of its log."""


def feature_gate_flag(gates: Mapping[str, bool]) -> str:
    """`--feature-gates` for a release: every gate that is not GA (a GA gate is locked on)."""
    items = []
    for name, on in sorted(gates.items()):
        gate = KUBE_FEATURE_GATES.get(name)
        stages = {stage for stage, _ in gate.releases.values()} if gate else set()
        if stages != {"ga"}:
            items.append(f"{name}={'true' if on else 'false'}")
    return ",".join(items)


def die_with_parent() -> None:
    """In a child before exec: SIGKILL it when the thread that started it dies (prctl
    PR_SET_PDEATHSIG), so a rehearsal killed outright leaves no apiserver or program behind."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


#: Starts of etcd and the apiserver tried with fresh ports when a port was taken meanwhile.
_PORT_ATTEMPTS = 3
_TAKEN = "address already in use"


def _ephemeral_low() -> int:
    """The lowest port the kernel hands to outgoing connections (`ip_local_port_range`)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_ports(count: int) -> list[int]:
    """`count` distinct loopback ports no one listens on now, below the kernel's ephemeral range: a
    port bound to 0 and released comes from that range, where any outgoing connection (a kubectl,
    another rehearsal's client) may take it before etcd or the apiserver binds it."""
    low = _ephemeral_low()
    ports: list[int] = []
    candidates = list(range(10000, low)) if low > 10000 + 10 * count else []
    random.shuffle(candidates)
    for port in candidates:
        if len(ports) == count:
            break
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        ports.append(port)
    while len(ports) < count:  # no room below the range: the kernel's choice, as before
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            if (port := int(s.getsockname()[1])) not in ports:
                ports.append(port)
    return ports


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _certificates(folder: Path) -> None:
    """A CA, the apiserver's serving certificate for loopback, and the service-account signing key."""
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes")
    _openssl(
        "req",
        "-x509",
        *ec,
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "2",
        "-subj",
        "/CN=rehearsal-ca",
        cwd=folder,
    )
    _openssl(
        "req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=kube-apiserver", cwd=folder
    )
    (folder / "san.ext").write_text(
        "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default.svc\n"
    )
    _openssl(
        "x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", "server.crt", "-days", "2", "-extfile", "san.ext", cwd=folder,
    )  # fmt: skip
    _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "sa.key", cwd=folder)
    _openssl("ec", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=folder)


@dataclass
class _Process:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    def tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


@dataclass
class ControlPlane:
    """Start with `with ControlPlane(assets, gates) as cp:`; `cp.kubeconfig` is the admin's."""

    assets: Assets
    gates: Mapping[str, bool]
    folder: Path | None = None
    keep: bool = False
    """Keep the folder (logs, etcd) after stopping, for a look at what happened."""
    server: str = ""
    token: str = ""
    processes: list[_Process] = field(default_factory=list)
    started_in: float = 0.0

    @property
    def kubeconfig(self) -> Path:
        assert self.folder is not None
        return self.folder / "admin.kubeconfig"

    @property
    def ca_file(self) -> Path:
        assert self.folder is not None
        return self.folder / "ca.crt"

    def __enter__(self) -> ControlPlane:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> None:
        """Certificates, etcd, the apiserver (until /readyz), then the controller-manager and scheduler."""
        began = time.monotonic()
        self.folder = (
            Path(tempfile.mkdtemp(prefix="gpuplatform-rehearsal-")) if self.folder is None else self.folder
        )
        folder = self.folder
        try:
            _certificates(folder)
            self.token = os.urandom(16).hex()
            manager, scheduler = os.urandom(16).hex(), os.urandom(16).hex()
            (folder / "tokens.csv").write_text(
                f"{self.token},rehearsal-admin,1,system:masters\n"
                f"{manager},system:kube-controller-manager,2,system:masters\n"
                f"{scheduler},system:kube-scheduler,3,system:masters\n"
            )
            self._serve()
            for name, token in (("kube-controller-manager", manager), ("kube-scheduler", scheduler)):
                config = folder / f"{name}.kubeconfig"
                self.write_kubeconfig(config, token)
                self._spawn(name, self._component_flags(name, config))
        except BaseException:
            self.stop()
            raise
        self.started_in = time.monotonic() - began

    def _serve(self) -> None:
        """etcd and the apiserver on fresh ports until /readyz; started again on other ports when
        one was taken between choosing it and binding it (a race no choice of port fully closes)."""
        assert self.folder is not None
        for attempt in range(1, _PORT_ATTEMPTS + 1):
            etcd_port, peer_port, api_port = free_ports(3)
            self.server = f"https://127.0.0.1:{api_port}"
            self._etcd(etcd_port, peer_port)
            self._apiserver(api_port, etcd_port)
            self.write_kubeconfig(self.kubeconfig, self.token)
            try:
                self._wait_ready()
                return
            except ControlPlaneFailed as exc:
                if _TAKEN not in str(exc) or attempt == _PORT_ATTEMPTS:
                    raise
            for process in reversed(self.processes):
                _terminate(process.popen)
            self.processes.clear()
            shutil.rmtree(self.folder / "etcd", ignore_errors=True)

    def write_kubeconfig(self, path: Path, token: str, namespace: str = "default") -> None:
        """A kubeconfig for this apiserver that authenticates with `token`."""
        path.write_text(
            "apiVersion: v1\nkind: Config\n"
            f"clusters:\n- name: rehearsal\n  cluster:\n    server: {self.server}\n"
            f"    certificate-authority: {self.ca_file}\n"
            f"users:\n- name: user\n  user:\n    token: {token}\n"
            f"contexts:\n- name: rehearsal\n  context:\n    cluster: rehearsal\n    user: user\n"
            f"    namespace: {namespace}\n"
            "current-context: rehearsal\n"
        )
        path.chmod(0o600)

    def _spawn(self, name: str, args: Sequence[str]) -> None:
        assert self.folder is not None
        log = self.folder / f"{name}.log"
        with log.open("wb") as out:
            popen = subprocess.Popen(
                [self.assets.binary(name), *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.folder,
                start_new_session=True,
                preexec_fn=die_with_parent,
            )
        self.processes.append(_Process(name, popen, log))

    def _etcd(self, port: int, peer: int) -> None:
        assert self.folder is not None
        client, peers = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{peer}"
        self._spawn(
            "etcd",
            [
                f"--data-dir={self.folder / 'etcd'}",
                f"--listen-client-urls={client}",
                f"--advertise-client-urls={client}",
                f"--listen-peer-urls={peers}",
                f"--initial-advertise-peer-urls={peers}",
                f"--initial-cluster=default={peers}",
                "--unsafe-no-fsync",
                "--log-level=warn",
            ],
        )

    def _apiserver(self, port: int, etcd: int) -> None:
        folder = self.folder
        assert folder is not None
        flags = [
            "--advertise-address=127.0.0.1",
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            f"--etcd-servers=http://127.0.0.1:{etcd}",
            f"--tls-cert-file={folder / 'server.crt'}",
            f"--tls-private-key-file={folder / 'server.key'}",
            f"--token-auth-file={folder / 'tokens.csv'}",
            "--authorization-mode=RBAC",
            f"--disable-admission-plugins={','.join(_DISABLED_ADMISSION)}",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={folder / 'sa.pub'}",
            f"--service-account-signing-key-file={folder / 'sa.key'}",
            "--allow-privileged=true",
            "--endpoint-reconciler-type=none",
            "--enable-aggregator-routing=true",
            "--kubelet-preferred-address-types=InternalIP",
            "--v=1",
        ]
        gates = feature_gate_flag(self.gates)
        self._spawn("kube-apiserver", [*flags, *([f"--feature-gates={gates}"] if gates else [])])

    def _component_flags(self, name: str, config: Path) -> list[str]:
        gates = feature_gate_flag(self.gates)
        common = [
            f"--kubeconfig={config}",
            "--leader-elect=false",
            "--secure-port=0",
            "--v=1",
            *([f"--feature-gates={gates}"] if gates else []),
        ]
        if name == "kube-controller-manager":
            return [*common, f"--controllers={','.join(CONTROLLERS)}", f"--root-ca-file={self.ca_file}"]
        return common

    def _wait_ready(self) -> None:
        context = ssl.create_default_context(cafile=str(self.ca_file))
        request = urllib.request.Request(
            f"{self.server}/readyz", headers={"Authorization": f"Bearer {self.token}"}
        )
        deadline = time.monotonic() + _READY_TIMEOUT
        while True:
            for process in self.processes:
                if process.popen.poll() is not None:
                    raise ControlPlaneFailed(
                        f"{process.name} exited ({process.popen.returncode}):\n{process.tail()}"
                    )
            try:
                with urllib.request.urlopen(request, context=context, timeout=2) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise ControlPlaneFailed(
                    f"kube-apiserver not ready in {_READY_TIMEOUT:.0f} s:\n{self.processes[-1].tail()}"
                )
            time.sleep(0.1)

    def check_alive(self) -> None:
        """ControlPlaneFailed when a component has exited."""
        for process in self.processes:
            if process.popen.poll() is not None:
                raise ControlPlaneFailed(
                    f"{process.name} exited ({process.popen.returncode}):\n{process.tail()}"
                )

    def stop(self) -> None:
        """Stop every component (the newest first), then remove the folder unless `keep`."""
        for process in reversed(self.processes):
            _terminate(process.popen)
        self.processes.clear()
        if self.folder is not None and not self.keep:
            shutil.rmtree(self.folder, ignore_errors=True)


def _terminate(popen: subprocess.Popen[bytes]) -> None:
    if popen.poll() is not None:
        return
    try:
        os.killpg(popen.pid, signal.SIGTERM)
        popen.wait(timeout=5)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(popen.pid, signal.SIGKILL)
        popen.wait()
