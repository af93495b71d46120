"""Cluster snapshots: `kubectl get -o json` per kind into a folder, plus a manifest of what is missing.

A snapshot is read-only evidence: whatever kubectl could read is kept; a forbidden or failing kind
is recorded in `manifest.json` and later counts as unknown, never as held. The logs of the gates'
own pods (labelled `gpuplatform.dev/gate` or `gpuplatform.dev/validation`) are kept beside the
JSON, as `logs/<namespace>_<pod>.log`: they carry what the validation containers saw. The layout
is documented in docs/evidence.md.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gpuplatform.adopt.running import capture_releases
from gpuplatform.errors import InputError
from gpuplatform.evidence.kubectl import kubectl, kubectl_tail
from gpuplatform.evidence.manifest import TIME_FORMAT, read_manifest, unread_kinds
from gpuplatform.evidence.shapes import check_items
from gpuplatform.evidence.snapshot_folder import fresh_folder, swap_in
from gpuplatform.labels import GATE_LABEL, VALIDATION_LABEL
from gpuplatform.load.json_list import read_list_items
from gpuplatform.load.yaml_input import MAX_DATA_BYTES, read_data, read_head, read_text
from gpuplatform.model.base import is_dns_label, is_dns_subdomain
from gpuplatform.output.write import write_file

__all__ = [
    "ADDON_KINDS",
    "DEFAULT_HELM_RELEASE",
    "KINDS",
    "LOGGED_LABELS",
    "NVIDIA_SMI_QUERY",
    "SELECTED",
    "Snapshot",
    "load_snapshot",
    "snapshot_or_pods",
    "take_snapshot",
]

#: kind -> (kubectl resource, namespaced). ReplicaSets and Jobs resolve pod owners to workloads.
KINDS: dict[str, tuple[str, bool]] = {
    "nodes": ("nodes", False),
    "pods": ("pods", True),
    "daemonsets": ("daemonsets.apps", True),
    "replicasets": ("replicasets.apps", True),
    "jobs": ("jobs.batch", True),
    "deviceclasses": ("deviceclasses.resource.k8s.io", False),
    "resourceslices": ("resourceslices.resource.k8s.io", False),
    "resourceclaims": ("resourceclaims.resource.k8s.io", True),
    "resourceclaimtemplates": ("resourceclaimtemplates.resource.k8s.io", True),
    "customresourcedefinitions": ("customresourcedefinitions.apiextensions.k8s.io", False),
    "deployments": ("deployments.apps", True),
    "configmaps": ("configmaps", True),
    "clusterqueues": ("clusterqueues.kueue.x-k8s.io", False),
    "localqueues": ("localqueues.kueue.x-k8s.io", True),
    "resourceflavors": ("resourceflavors.kueue.x-k8s.io", False),
    "workloads": ("workloads.kueue.x-k8s.io", True),
}
#: Kinds of add-ons a cluster may not run (Kueue): when the API server has no such resource type, the
#: snapshot records them as read with no object (nothing of the kind exists), not as missing.
ADDON_KINDS = frozenset({"clusterqueues", "localqueues", "resourceflavors", "workloads"})
_NO_TYPE = "the server doesn't have a resource type"
#: Kinds read selectively (the engines' preflight): only these objects, not every one in the cluster.
SELECTED: dict[str, tuple[str, ...]] = {
    "customresourcedefinitions": (
        "appprojects.argoproj.io",
        "helmreleases.helm.toolkit.fluxcd.io",
        "ocirepositories.source.toolkit.fluxcd.io",
        "--ignore-not-found",
    ),
    "deployments": ("-l", "app.kubernetes.io/part-of in (argocd,flux)"),
    "configmaps": ("--field-selector", "metadata.name=argocd-cm"),
}
#: The GPU Operator's release as its install guide names it (`helm install -n gpu-operator gpu-operator`).
DEFAULT_HELM_RELEASE = "gpu-operator/gpu-operator"
NVIDIA_SMI_QUERY = ("nvidia-smi", "--query-gpu=name,memory.total,uuid", "--format=csv")
#: Pods whose logs a snapshot keeps: the gate Jobs' and the validation workloads'.
LOGGED_LABELS = (GATE_LABEL, VALIDATION_LABEL)
#: Bytes of a pod's log (or of an `nvidia-smi` run) a snapshot keeps: the last ones, stated in the
#: manifest as `logLimitBytes`; a log is read back whole (the validation pods print a few lines).
LOG_LIMIT = 1 << 20


def _reason(stderr: str) -> str:
    text = stderr.strip().splitlines()[-1] if stderr.strip() else "kubectl failed"
    return "forbidden: " + text if "forbidden" in stderr.lower() else text


def _logged_pods(pods: list[dict[str, Any]]) -> list[str]:
    """`namespace/pod` of the gate and validation pods whose containers have started."""
    out = []
    for pod in pods:
        meta = pod.get("metadata") or {}
        labels = meta.get("labels") or {}
        if (
            any(key in labels for key in LOGGED_LABELS)
            and (pod.get("status") or {}).get("phase") != "Pending"
        ):
            out.append(f"{meta.get('namespace')}/{meta.get('name')}")
    return sorted(out)


def _names(target: str, *, release: bool = False) -> bool:
    """Whether `namespace/name` names a pod (or a Helm release) by Kubernetes' rules: it becomes the
    file name `<namespace>_<name>.<suffix>`, so nothing read from the cluster may carry a path."""
    namespace, _, name = target.partition("/")
    return is_dns_label(namespace) and (is_dns_label(name) if release else is_dns_subdomain(name))


def _capture(
    out: Path,
    kind: tuple[str, str, str],
    targets: Sequence[str],
    command: Callable[[str, str], list[str]],
    context: str | None,
    manifest: dict[str, Any],
) -> None:
    """Run `command` per `namespace/pod` into `<folder>/<namespace>_<pod>.<suffix>`; record each in the manifest."""
    folder, suffix, key = kind
    for target in targets:
        namespace, _, pod = target.partition("/")
        if not _names(target):
            manifest[key][target] = "missing: not a Kubernetes namespace and pod name"
            manifest["missing"].append(f"{folder} {target}")
            continue
        result = kubectl_tail(command(namespace, pod), context, LOG_LIMIT)
        if result.returncode == 0:
            (out / folder).mkdir(exist_ok=True)
            write_file(out / folder / f"{namespace}_{pod}.{suffix}", result.stdout.encode())
            cut = result.printed > LOG_LIMIT
            manifest[key][target] = f"ok: the last {LOG_LIMIT} of {result.printed} bytes" if cut else "ok"
        else:
            manifest[key][target] = "missing: " + _reason(result.stderr)
            manifest["missing"].append(f"{folder} {target}")


def take_snapshot(
    out: Path,
    *,
    context: str | None = None,
    namespaces: Sequence[str] = (),
    nvidia_smi_pods: Sequence[str] = (),
    log_pods: Sequence[str] = (),
    helm_releases: Sequence[str] = (DEFAULT_HELM_RELEASE,),
) -> dict[str, Any]:
    """Write one `<kind>.json` per kind, the logs and `manifest.json` into a new folder that then
    replaces `out` whole (`snapshot_folder`); return the manifest.

    When kubectl cannot reach the cluster at all (`kubectl version` fails), nothing else is tried:
    the manifest records the reason once under `unreachable`.

    `namespaces` limits namespaced kinds (default: all); `nvidia_smi_pods` are `namespace/pod`
    names in which `nvidia-smi` is run through `kubectl exec`; `log_pods` are pods whose logs are
    kept besides the gate and validation pods'; `helm_releases` are `namespace/name` Helm releases
    whose chart and user-supplied values are read from Helm's storage (`helm/`); a release that is
    not installed is noted, a release that cannot be read is missing.
    """
    for option, targets in (
        ("--nvidia-smi", nvidia_smi_pods),
        ("--logs", log_pods),
        ("--helm-release", helm_releases),
    ):
        for target in targets:
            if not _names(target, release=option == "--helm-release"):
                what = "NAMESPACE/RELEASE" if option == "--helm-release" else "NAMESPACE/POD"
                raise InputError.single(option, "", f"{target!r} is not {what} (Kubernetes names)")
    if shutil.which("kubectl") is None:
        raise InputError.single("kubectl", "", "kubectl is not on PATH; install it or run where it is")
    out = Path(os.path.abspath(out))
    fresh = fresh_folder(out, KINDS)
    try:
        manifest = _read_cluster(fresh, context, namespaces, nvidia_smi_pods, log_pods, helm_releases)
        swap_in(fresh, out)
    finally:
        if os.path.lexists(fresh):
            shutil.rmtree(fresh, ignore_errors=True)
    return manifest


def _read_cluster(
    out: Path,
    context: str | None,
    namespaces: Sequence[str],
    nvidia_smi_pods: Sequence[str],
    log_pods: Sequence[str],
    helm_releases: Sequence[str],
) -> dict[str, Any]:
    """`take_snapshot` into the new folder `out`."""
    manifest: dict[str, Any] = {
        "context": context,
        "kinds": {},
        "nvidiaSmi": {},
        "logs": {},
        "logLimitBytes": LOG_LIMIT,
        "missing": [],
    }
    manifest["started"] = _now()
    current = kubectl(["config", "current-context"], context)
    manifest["context"] = context or (current.stdout.strip() if current.returncode == 0 else None)
    version = kubectl(["version", "-o", "json"], context)
    try:
        manifest["serverVersion"] = json.loads(version.stdout).get("serverVersion", {}).get("gitVersion")
    except json.JSONDecodeError:
        manifest["serverVersion"] = None
    if version.returncode != 0:
        # Nothing can be read from a cluster kubectl cannot talk to: say so once, not once per kind.
        manifest["unreachable"] = _reason(version.stderr)
        manifest["missing"] = [
            *KINDS,
            *(f"nvidia-smi {t}" for t in nvidia_smi_pods),
            *(f"logs {t}" for t in log_pods),
            *(f"helm release {t}" for t in helm_releases),
        ]
        return _finish(out, manifest)
    logged: list[str] = []
    for kind, (resource, namespaced) in KINDS.items():
        items: list[Any] = []
        errors = []
        scopes = (
            [["-n", ns] for ns in namespaces] if namespaced and namespaces else [["-A"] if namespaced else []]
        )
        for scope in scopes:
            result = kubectl(["get", resource, *SELECTED.get(kind, ()), *scope, "-o", "json"], context)
            if result.returncode != 0:
                errors.append(_reason(result.stderr))
                continue
            try:
                items += json.loads(result.stdout or '{"items": []}').get("items", [])
            except json.JSONDecodeError:
                errors.append("kubectl printed no JSON")
        not_installed = kind in ADDON_KINDS and errors and all(_NO_TYPE in e for e in errors)
        if errors and not not_installed:
            manifest["kinds"][kind] = "missing: " + "; ".join(errors)
            manifest["missing"].append(kind)
            continue
        write_file(
            out / f"{kind}.json",
            (json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=2) + "\n").encode(),
        )
        manifest["kinds"][kind] = "not installed: 0 object(s)" if not_installed else f"{len(items)} object(s)"
        if kind == "pods":
            logged = _logged_pods(items)
    _capture(
        out,
        ("logs", "log", "logs"),
        sorted({*logged, *log_pods}),
        lambda ns, pod: ["logs", "-n", ns, pod, "--all-containers"],
        context,
        manifest,
    )
    _capture(
        out,
        ("nvidia-smi", "csv", "nvidiaSmi"),
        nvidia_smi_pods,
        lambda ns, pod: ["exec", "-n", ns, pod, "--", *NVIDIA_SMI_QUERY],
        context,
        manifest,
    )

    def run(args: list[str]) -> tuple[int, str, str]:
        done = kubectl(args, context)
        return done.returncode, done.stdout, done.stderr

    manifest["helmReleases"] = capture_releases(run, out, helm_releases)
    manifest["missing"] += [
        f"helm release {t}"
        for t, state in manifest["helmReleases"].items()
        if state != "ok" and "no deployed Helm release" not in state
    ]
    return _finish(out, manifest)


def _now() -> str:
    return datetime.now(UTC).strftime(TIME_FORMAT)


def _finish(out: Path, manifest: dict[str, Any]) -> dict[str, Any]:
    manifest["time"] = _now()
    write_file(out / "manifest.json", (json.dumps(manifest, indent=2) + "\n").encode())
    return manifest


@dataclass
class Snapshot:
    """A snapshot folder, read: items per kind (`None` when missing), nvidia-smi rows, pod logs.

    With `lazy`, a kind not in `kinds` is read from `<folder>/<kind>.json` when first asked for
    (`load_snapshot`): a command reads the kinds it uses, and a forked child can read some while its
    parent reads others. A file that is not `kubectl get -o json` output is refused then.
    """

    folder: Path
    kinds: dict[str, list[dict[str, Any]] | None] = field(default_factory=dict)
    nvidia_smi: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    logs: dict[str, str] = field(default_factory=dict)
    """`namespace/pod` -> the `kubectl logs` text."""
    lazy: bool = False
    manifest: dict[str, Any] | None = None
    """`manifest.json`, when the folder has one: the kinds it does not record as read are unknown."""

    kept: set[str] = field(default_factory=set)
    """Kinds read from the folder through a `keep` function: held only as it returned them."""

    def items(
        self, kind: str, keep: Callable[[list[Any]], list[Any]] | None = None
    ) -> list[dict[str, Any]] | None:
        """The items of `kind` (None when missing); when first read from the folder, each batch of
        items read passes through `keep` (evidence keeps the fields the gates read)."""
        if self.lazy and kind not in self.kinds and kind in KINDS:
            unread = self.manifest is not None and kind in unread_kinds(self.manifest, (kind,))
            self.kinds[kind] = None if unread else _read_kind(self.folder, kind, keep)
            if keep is not None:
                self.kept.add(kind)
        return self.kinds.get(kind)

    def every_kind(self) -> dict[str, list[dict[str, Any]] | None]:
        """Items of every kind a snapshot holds (None for a missing one)."""
        return {kind: self.items(kind) for kind in KINDS}

    def runtime_logs(self) -> dict[str, str]:
        """Pod logs, with each `--nvidia-smi` CSV row added as the `nvidia-smi -L` line it stands for."""
        out = dict(self.logs)
        for target, rows in self.nvidia_smi.items():
            lines = [
                f"GPU {i}: {row.get('name', '')} (UUID: {row.get('uuid', '')})" for i, row in enumerate(rows)
            ]
            out[target] = out.get(target, "") + "".join(f"{line}\n" for line in lines)
        return out


def _csv_rows(text: str) -> list[dict[str, str]]:
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    header = [h.strip() for h in lines[0].split(",")]
    return [dict(zip(header, (c.strip() for c in line.split(",")), strict=False)) for line in lines[1:]]


def _read_kind(
    folder: Path, kind: str, keep: Callable[[list[Any]], list[Any]] | None
) -> list[dict[str, Any]] | None:
    """The items of `<folder>/<kind>.json` through `keep` (None when there is no such file):
    streamed, or, from a file the streamed read does not vouch for, read whole as before."""
    path = folder / f"{kind}.json"
    if not os.path.lexists(path):
        return None
    checked = _Checked(kind, path, keep)
    streamed = read_list_items(path, checked)
    if streamed is not None:
        checked.raise_refusal()
        return streamed
    doc = read_data(path, follow_links=False)
    items = doc.get("items") if isinstance(doc, dict) else None
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise InputError.single(
            str(path), "items", "expected `kubectl get -o json` output (a List of objects)"
        )
    check_items(kind, items, str(path))
    return items if keep is None else keep(items)


class _Checked:
    """`keep` after the shape check of each streamed batch, its items numbered in the file. The
    first refusal is kept until the whole file has been read, so a file that is not JSON further
    on is refused as not JSON, as the whole read refuses it."""

    def __init__(self, kind: str, path: Path, keep: Callable[[list[Any]], list[Any]] | None) -> None:
        self.kind, self.path, self.keep = kind, path, keep
        self.read = 0
        self.refused: InputError | None = None

    def __call__(self, batch: list[Any]) -> list[Any]:
        if self.refused is None:
            try:
                check_items(self.kind, batch, str(self.path), start=self.read)
            except InputError as exc:
                self.refused = exc
        self.read += len(batch)
        return batch if self.keep is None else self.keep(batch)

    def raise_refusal(self) -> None:
        if self.refused is not None:
            raise self.refused


def load_snapshot(folder: Path) -> Snapshot:
    """A snapshot folder (or a folder of `kubectl get -o json` files named `<kind>.json`): its
    logs and nvidia-smi rows read, its kinds read when first asked for."""
    if not folder.is_dir():
        raise InputError.single(str(folder), "", "no such snapshot folder")
    snapshot = Snapshot(folder, lazy=True, manifest=read_manifest(folder))
    for path in _files(folder / "nvidia-smi", ".csv"):
        namespace, _, pod = path.stem.partition("_")
        snapshot.nvidia_smi[f"{namespace}/{pod}"] = _csv_rows(
            read_text(path, MAX_DATA_BYTES, follow_links=False)
        )
    for path in _files(folder / "logs", ".log"):
        namespace, _, pod = path.stem.partition("_")
        snapshot.logs[f"{namespace}/{pod}"] = read_head(path, LOG_LIMIT, follow_links=False)
    return snapshot


def _files(folder: Path, suffix: str) -> list[Path]:
    """The `*<suffix>` entries of a snapshot's sub-folder, sorted; a link is refused, never followed."""
    if os.path.islink(folder):
        raise InputError.single(
            str(folder), "", "is a symbolic link; gpuplatform does not follow links in a snapshot"
        )
    if not folder.is_dir():
        return []
    return sorted(folder / e.name for e in os.scandir(folder) if e.name.endswith(suffix))


def snapshot_or_pods(path: Path) -> Snapshot:
    """A snapshot folder, or a lone `kubectl get pods -A -o json` file as a snapshot of pods only."""
    if path.is_dir():
        return load_snapshot(path)
    doc = read_data(path)
    items = doc.get("items") if isinstance(doc, dict) else None
    if not isinstance(items, list):
        raise InputError.single(
            str(path), "items", "expected a snapshot folder or `kubectl get pods -A -o json` output"
        )
    check_items("pods", items, str(path))
    snapshot = Snapshot(path.parent, {k: None for k in KINDS})
    snapshot.kinds["pods"] = items
    return snapshot
