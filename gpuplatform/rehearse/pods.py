"""What the kubelet does to start a container of the product's programs: volumes, environment,
identity, and the process (`runtime.py`).

Pods of the Jobs the engine applied from the tree (gates, allocator switch, probes, hook cleanup)
run a process, and so do the servers the rehearsal runs for real (Kueue's manager: `images` maps
its image to the built binary, mounted at the container's command); every other pod (workloads,
operands, plugins) is emulated as running. A program pod gets what a kubelet gives it:

- volumes: ConfigMaps and Secrets (`items` or every key), emptyDirs, and the projected
  service-account volume the ServiceAccount admission plugin adds: a token from the TokenRequest
  API bound to the pod, `ca.crt` from `kube-root-ca.crt`, the namespace;
- environment: `value`, `valueFrom` (fieldRef, configMapKeyRef, secretKeyRef), `envFrom`, and the
  `kubernetes` Service's `KUBERNETES_SERVICE_HOST`/`_PORT`, so `kubectl` finds its in-cluster
  config and acts as the Job's ServiceAccount: RBAC decides what it may do;
- for a server: its ConfigMap and Secret volumes follow their objects while it runs, except what
  it mounts with `subPath` (the kubelet's atomic writer swaps files, kubernetes
  `pkg/volume/util/atomic_writer.go`; "A container using a ConfigMap as a subPath volume mount will
  not receive ConfigMap updates", kubernetes.io ConfigMap docs); it is Ready once its `readinessProbe` (httpGet) answers; its pod IP is the host's own
  address (an EndpointSlice refuses loopback addresses, kubernetes `pkg/apis/discovery/validation`
  `validateEndpoints`, and the apiserver calls a webhook through its Service's endpoints);
- `nvidia-smi -L` lists the GPUs the kubelet gave the container (its claims' devices, its
  device-plugin GPUs, or all of them with NVIDIA_VISIBLE_DEVICES=all).
"""

from __future__ import annotations

import base64
import functools
import os
import re
import shutil
import socket
import ssl
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuplatform.rehearse.client import ApiError, Client, Obj
from gpuplatform.rehearse.runtime import Mount, Process, Runtime

__all__ = ["NVIDIA_SMI", "PodLauncher", "host_address"]

NVIDIA_SMI = r"""#!/bin/sh
# rehearsal shim: nvidia-smi lists the GPUs the kubelet gave this container (gpuplatform rehearse)
if [ ! -s /rehearsal/gpus ]; then echo "No devices were found"; exit 6; fi
cat /rehearsal/gpus
"""
_STOP_GRACE = 5.0
#: Wall seconds between two refreshes of a server's volumes, and between two readiness probes.
_REFRESH = 1.0
_PROBE = 0.5
_FIELD = re.compile(r"metadata\.(labels|annotations)\['([^']+)'\]")


def _field(pod: Obj, path: str) -> str:
    meta = pod["metadata"]
    match = _FIELD.fullmatch(path)
    if match:
        return str((meta.get(match.group(1)) or {}).get(match.group(2), ""))
    values = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"),
        "spec.nodeName": pod["spec"].get("nodeName"),
        "spec.serviceAccountName": pod["spec"].get("serviceAccountName"),
        "status.podIP": "127.0.0.1",
        "status.hostIP": "127.0.0.1",
    }
    return str(values.get(path) or "")


@dataclass
class PodLauncher:
    """Starts, stops and reads the program pods; `programs` names the Jobs whose pods run."""

    client: Client
    runtime: Runtime
    folder: Path
    server_port: int
    cert: Path
    key: Path
    programs: set[tuple[str, str]] = field(default_factory=set)
    """(namespace, Job) the engine applied from the tree."""
    images: dict[str, Path] = field(default_factory=dict)
    """Image -> the built binary that stands for it: a pod of such an image runs as a server."""
    _stopping: dict[str, float] = field(default_factory=dict)
    _servers: dict[str, float] = field(default_factory=dict)
    """Key of a started server pod -> when its volumes were last refreshed."""
    _probed: dict[str, float] = field(default_factory=dict)

    def is_program(self, pod: Obj) -> bool:
        for ref in pod["metadata"].get("ownerReferences") or []:
            if ref.get("kind") == "Job" and (pod["metadata"]["namespace"], ref.get("name")) in self.programs:
                return True
        return self.is_server(pod)

    def is_server(self, pod: Obj) -> bool:
        """A pod of an image the rehearsal has a binary for (a server, not a Job the tree runs)."""
        return any(c.get("image") in self.images for c in pod["spec"].get("containers") or [])

    def pod_ip(self, pod: Obj) -> str:
        """The pod's IP: the host's address for a server (see the module's docstring), else loopback."""
        return host_address() if self.is_server(pod) else "127.0.0.1"

    def serving(self) -> set[str]:
        """Keys of the server pods started: they never sleep on the clock, so time does not wait on them."""
        return set(self._servers)

    def _key(self, pod: Obj) -> str:
        return f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"

    def start(self, pod: Obj, gpus: list[str]) -> None:
        """Start the pod's containers when it is a program pod (nothing to run otherwise)."""
        if not self.is_program(pod):
            return
        key = self._key(pod)
        slot = self.folder / key.replace("/", "_")
        shutil.rmtree(slot, ignore_errors=True)
        slot.mkdir(parents=True)
        (slot / "gpus").write_text("".join(f"{line}\n" for line in gpus))
        volumes = self._volumes(pod, slot)
        if self.is_server(pod):
            self._servers[key] = time.monotonic()
        for container in pod["spec"].get("containers") or []:
            mounts = [Mount(slot / "gpus", "/rehearsal/gpus", True)]
            binary = self.images.get(str(container.get("image")))
            if binary is not None and container.get("command"):
                mounts.append(Mount(binary, container["command"][0], True))
            for mount in container.get("volumeMounts") or []:
                source = volumes.get(mount["name"])
                if source is None:
                    continue
                if mount.get("subPath"):
                    source = source / mount["subPath"]
                mounts.append(Mount(source, mount["mountPath"], bool(mount.get("readOnly"))))
            argv = [*(container.get("command") or []), *(container.get("args") or [])]
            security = container.get("securityContext") or {}
            pod_security = pod["spec"].get("securityContext") or {}
            user = security.get("runAsUser", pod_security.get("runAsUser"))
            self.runtime.start(
                key,
                container["name"],
                argv or ["true"],
                self._env(pod, container),
                mounts,
                user=int(user) if user is not None else None,
                read_only_root=bool(security.get("readOnlyRootFilesystem")),
                workdir=str(container.get("workingDir") or ""),
            )

    def _processes(self, pod: Obj) -> list[Process]:
        key = self._key(pod)
        return [p for (k, _), p in self.runtime.processes.items() if k == key]

    def exit_codes(self, pod: Obj) -> dict[str, int] | None:
        """Container -> exit code once every container has exited; None while one runs (or none ever ran)."""
        processes = self._processes(pod)
        if not processes or any(p.poll() is None for p in processes):
            return None
        return {p.container: int(p.exit_code or 0) for p in processes}

    def stopped(self, pod: Obj) -> bool:
        """The kubelet's stop of a deleted pod: SIGTERM, then SIGKILL after the grace period."""
        processes = [p for p in self._processes(pod) if p.poll() is None]
        if not processes:
            return True
        key = self._key(pod)
        if key not in self._stopping:
            self._stopping[key] = time.monotonic()
            for process in processes:
                process.terminate()
            return False
        if time.monotonic() - self._stopping[key] > _STOP_GRACE:
            for process in processes:
                process.kill()
            return True
        return False

    def forget(self, pod: Obj) -> None:
        key = self._key(pod)
        self._stopping.pop(key, None)
        self._servers.pop(key, None)
        self._probed.pop(key, None)
        for process in self._processes(pod):
            process.kill()

    def refresh(self, pod: Obj) -> None:
        """A running server's ConfigMap and Secret volumes as their objects are now (every `_REFRESH` s)."""
        key = self._key(pod)
        if time.monotonic() - self._servers.get(key, 0.0) < _REFRESH:
            return
        self._servers[key] = time.monotonic()
        folder = self.folder / key.replace("/", "_") / "volumes"
        for volume in pod["spec"].get("volumes") or []:
            if "configMap" in volume or "secret" in volume:
                self._fill(folder / volume["name"], pod, volume)

    def _readiness(self, pod: Obj) -> list[dict[str, Any]]:
        """A server's readiness probes (none for every other pod: Ready once started)."""
        containers = pod["spec"].get("containers") or [] if self.is_server(pod) else []
        return [c["readinessProbe"] for c in containers if c.get("readinessProbe")]

    def ready_at_start(self, pod: Obj) -> bool:
        """Ready as soon as it runs: it has no readiness probe to answer first."""
        return not self._readiness(pod)

    def probe(self, pod: Obj) -> bool:
        """Whether every readiness probe's httpGet answers 200-399 now (asked at most every `_PROBE` s)."""
        key = self._key(pod)
        if time.monotonic() - self._probed.get(key, 0.0) < _PROBE:
            return False
        self._probed[key] = time.monotonic()
        return all(_http_get(p.get("httpGet") or {}) for p in self._readiness(pod))

    def log(self, namespace: str, name: str, container: str) -> str | None:
        process = self.runtime.processes.get((f"{namespace}/{name}", container))
        if process is None:
            return "" if self._exists(namespace, name) else None
        return process.log.read_text(errors="replace")

    def _exists(self, namespace: str, name: str) -> bool:
        try:
            return self.client.get("Pod", name, namespace) is not None
        except ApiError:
            return False

    # --- what a kubelet materialises ------------------------------------------------------------

    def _volumes(self, pod: Obj, slot: Path) -> dict[str, Path]:
        out: dict[str, Path] = {}
        for volume in pod["spec"].get("volumes") or []:
            path = slot / "volumes" / volume["name"]
            path.mkdir(parents=True)
            if "emptyDir" in volume:
                path.chmod(0o1777)
            elif "configMap" in volume or "secret" in volume:
                self._fill(path, pod, volume)
            elif "projected" in volume:
                self._projected(path, pod, volume["projected"].get("sources") or [])
            out[volume["name"]] = path
        return out

    def _fill(self, path: Path, pod: Obj, volume: dict[str, Any]) -> None:
        namespace = pod["metadata"]["namespace"]
        if "configMap" in volume:
            data = self._data("ConfigMap", volume["configMap"]["name"], namespace)
            self._keys(path, data, volume["configMap"].get("items"))
        else:
            data = self._data("Secret", volume["secret"]["secretName"], namespace)
            self._keys(path, data, volume["secret"].get("items"))

    def _data(self, kind: str, name: str, namespace: str) -> dict[str, str]:
        obj = self.client.get(kind, name, namespace) or {}
        data = {str(k): str(v) for k, v in (obj.get("data") or {}).items()}
        if kind == "Secret":
            data = {k: base64.b64decode(v).decode(errors="replace") for k, v in data.items()}
        return data

    @staticmethod
    def _keys(path: Path, data: dict[str, str], items: list[dict[str, Any]] | None) -> None:
        wanted = [(i["key"], i.get("path", i["key"])) for i in items] if items else [(k, k) for k in data]
        for key, relative in wanted:
            if key in data:
                target = path / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                if target.is_file() and target.read_text() == data[key]:
                    continue
                fresh = target.with_name(f".{target.name}.new")
                fresh.write_text(data[key])
                fresh.chmod(0o644)
                os.replace(
                    fresh, target
                )  # a new file, as the kubelet's atomic writer: a subPath keeps the old

    def _projected(self, path: Path, pod: Obj, sources: list[dict[str, Any]]) -> None:
        namespace = pod["metadata"]["namespace"]
        for source in sources:
            if "serviceAccountToken" in source:
                token = self._token(pod, source["serviceAccountToken"])
                (path / source["serviceAccountToken"].get("path", "token")).write_text(token)
            elif "configMap" in source:
                self._keys(
                    path,
                    self._data("ConfigMap", source["configMap"]["name"], namespace),
                    source["configMap"].get("items"),
                )
            elif "secret" in source:
                self._keys(
                    path,
                    self._data("Secret", source["secret"]["name"], namespace),
                    source["secret"].get("items"),
                )
            elif "downwardAPI" in source:
                for item in source["downwardAPI"].get("items") or []:
                    (path / item["path"]).write_text(_field(pod, item["fieldRef"]["fieldPath"]))
        for child in path.rglob("*"):
            child.chmod(0o755 if child.is_dir() else 0o644)

    def _token(self, pod: Obj, source: dict[str, Any]) -> str:
        """TokenRequest for the pod's ServiceAccount, bound to the pod, as the kubelet asks for it."""
        meta = pod["metadata"]
        account = pod["spec"].get("serviceAccountName") or "default"
        body: Obj = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {
                "expirationSeconds": int(source.get("expirationSeconds", 3607)),
                "boundObjectRef": {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": meta["name"],
                    "uid": meta["uid"],
                },
            },
        }
        if source.get("audience"):
            body["spec"]["audiences"] = [source["audience"]]
        answer = self.client.request(
            "POST", f"/api/v1/namespaces/{meta['namespace']}/serviceaccounts/{account}/token", body
        )
        return str(answer["status"]["token"])

    def _env(self, pod: Obj, container: dict[str, Any]) -> dict[str, str]:
        namespace = pod["metadata"]["namespace"]
        env = {
            "KUBERNETES_SERVICE_HOST": "127.0.0.1",
            "KUBERNETES_SERVICE_PORT": str(self.server_port),
            "KUBERNETES_PORT": f"tcp://127.0.0.1:{self.server_port}",
            "HOSTNAME": pod["metadata"]["name"],
        }
        for source in container.get("envFrom") or []:
            prefix = source.get("prefix", "")
            if "configMapRef" in source:
                env |= {
                    prefix + k: v
                    for k, v in self._data("ConfigMap", source["configMapRef"]["name"], namespace).items()
                }
            elif "secretRef" in source:
                env |= {
                    prefix + k: v
                    for k, v in self._data("Secret", source["secretRef"]["name"], namespace).items()
                }
        for item in container.get("env") or []:
            if "value" in item:
                env[item["name"]] = str(item["value"])
                continue
            ref = item.get("valueFrom") or {}
            if "fieldRef" in ref:
                env[item["name"]] = _field(pod, ref["fieldRef"]["fieldPath"])
            elif "configMapKeyRef" in ref:
                data = self._data("ConfigMap", ref["configMapKeyRef"]["name"], namespace)
                env[item["name"]] = data.get(ref["configMapKeyRef"]["key"], "")
            elif "secretKeyRef" in ref:
                data = self._data("Secret", ref["secretKeyRef"]["name"], namespace)
                env[item["name"]] = data.get(ref["secretKeyRef"]["key"], "")
        return env


@functools.cache
def host_address() -> str:
    """The host's IPv4 address a route to a documentation address (RFC 5737) leaves from: a UDP
    connect sends nothing. The loopback address when it has no route."""
    for target in ("203.0.113.1", "192.0.2.1"):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            try:
                s.connect((target, 9))
            except OSError:
                continue
            return str(s.getsockname()[0])
    return "127.0.0.1"


def _http_get(action: dict[str, Any]) -> bool:
    """A kubelet's httpGet probe on the pod's IP (the host's loopback here): 200-399 within a second."""
    scheme = str(action.get("scheme") or "HTTP").lower()
    url = f"{scheme}://127.0.0.1:{action.get('port')}{action.get('path') or '/'}"
    context = (
        ssl._create_unverified_context() if scheme == "https" else None
    )  # the kubelet skips verification
    try:
        with urllib.request.urlopen(url, timeout=1.0, context=context) as answer:
            return 200 <= int(answer.status) < 400
    except (urllib.error.URLError, OSError, ValueError):
        return False
