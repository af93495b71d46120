"""Taking a snapshot: `kubectl get -o json` per kind into a folder, plus a manifest of what is missing.

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
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gpuplatform.adopt.running import capture_releases
from gpuplatform.errors import InputError
from gpuplatform.labels import GATE_LABEL, VALIDATION_LABEL
from gpuplatform.model.base import is_dns_label, is_dns_subdomain
from gpuplatform.output.write import write_file
from gpuplatform.snapshot.kubectl import kubectl, kubectl_tail
from gpuplatform.snapshot.manifest import TIME_FORMAT
from gpuplatform.snapshot.read import ADDON_KINDS, KINDS, LOG_LIMIT
from gpuplatform.snapshot.write import fresh_folder, swap_in

__all__ = ["DEFAULT_HELM_RELEASE", "LOGGED_LABELS", "NVIDIA_SMI_QUERY", "SELECTED", "take_snapshot"]

_NO_TYPE = "the server doesn't have a resource type"
#: Kinds read selectively (the preflight): only these objects, not every one in the cluster; the
#: manifest records the arguments (`selected`), so a reader knows what an absent object means.
SELECTED: dict[str, tuple[str, ...]] = {
    "customresourcedefinitions": (
        "appprojects.argoproj.io",
        "helmreleases.helm.toolkit.fluxcd.io",
        "ocirepositories.source.toolkit.fluxcd.io",
        "prometheusrules.monitoring.coreos.com",
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
        "selected": {kind: list(args) for kind, args in SELECTED.items()},
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
