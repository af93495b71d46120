"""Kueue in the rehearsal: the release's own install, and its controller manager run as a program.

Kueue needs no GPU, so the rehearsal runs the real one. `scripts/build-control-plane` builds
sigs.k8s.io/kueue's `cmd/kueue` at the release into `<cache>/kueue-vX.Y.Z/manager` and writes the
release's install beside it (`manifests.yaml`: `kustomize build config/default` with the release
image, as Kueue's Makefile makes it). The rehearsal applies that install before the first wave; the
emulated kubelet runs the manager's pod with the built binary as the image's `/manager`, as its
ServiceAccount, so Kueue's own webhooks, cert rotation, admission and RBAC are what act.

What differs from the release's install, and why:
- every pod of the rehearsal shares the host's loopback, so the ports the manager binds (health
  8081, metrics 8443, webhooks 9443, visibility 8082) are free ones, in its Configuration, the
  container's ports and probes and the Services' target ports; for the same reason the manager's
  Deployment rolls with `Recreate`: two managers on one host would bind the same ports, where on a
  real cluster each pod has its own address (so a restart here has a gap the real one has not:
  pods created in it are refused by the webhooks, and their controllers retry);
- no APIService for the on-demand visibility API (`VisibilityOnDemand` off): the rehearsal's
  apiserver has no front-proxy certificates for aggregated APIs, and nothing the product ships
  reads that API;
- the namespace is `kueue.namespace` of the spec, as `kustomize edit set namespace` would make it.

Before the first wave the cluster already runs Kueue with the team's own queues, which the first wave's
replace (the spec's `kueue` describes them): the rehearsal creates them as the first wave renders
them, without the flavors' `nodeLabels` (the product's mode label, which no node has before the
first wave is adopted), so the team's queued Jobs are admitted and run as they do today.

Kueue's Configuration belongs to its owner: when the runbook hands it off (`kueue/runbook.py`), the
rehearsal's owner writes the wave's hand-off into the ConfigMap (`configure_kueue`), and the
runbook's own block restarts the manager, which reads it only when it starts.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpuplatform.kueue.model import QUEUE_LABEL, Kueue
from gpuplatform.kueue.render import kueue_configuration_handoff
from gpuplatform.output.yaml import dump_yaml
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.rehearse.assets import AssetsMissing, cache_root
from gpuplatform.rehearse.client import Client, Obj
from gpuplatform.rehearse.cluster import Rehearsal, WaitFailed
from gpuplatform.rehearse.controlplane import free_ports

__all__ = [
    "KUEUE_CONFIGMAP",
    "KUEUE_CONFIG_KEY",
    "KueueRelease",
    "configure_kueue",
    "find_kueue",
    "install_kueue",
    "kueue_install",
    "kueue_undecided",
    "team_queues",
]

#: The ConfigMap the manager reads its Configuration from, and its key (config/components/manager).
KUEUE_CONFIGMAP = "kueue-manager-config"
KUEUE_CONFIG_KEY = "controller_manager_config.yaml"
_RELEASE_NAMESPACE = "kueue-system"
_MANAGER = "deployment/kueue-controller-manager"
_WEBHOOK_SERVICE = "kueue-webhook-service"
#: Wall seconds the manager may take to become Ready (certificates, caches, webhooks).
_READY = 180
#: The manager's ports in the release's install -> what each is for.
_PORTS = {8081: "health", 8443: "metrics", 9443: "webhook", 8082: "visibility"}


@dataclass(frozen=True)
class KueueRelease:
    """One built Kueue release: its manager binary and its install."""

    folder: Path
    version: str

    @property
    def manager(self) -> Path:
        return self.folder / "manager"

    @property
    def image(self) -> str:
        """The image the release's Deployment names (what the built manager stands for)."""
        return f"registry.k8s.io/kueue/kueue:v{self.version}"

    def manifests(self) -> list[Obj]:
        text = (self.folder / "manifests.yaml").read_text()
        return [d for d in yaml.load_all(text, Loader=yaml.CSafeLoader) if isinstance(d, dict)]


def find_kueue(version: str) -> KueueRelease:
    """Kueue `version` (`0.19.2`) as `scripts/build-control-plane kueue-v<version>` leaves it."""
    folder = cache_root() / f"kueue-v{version}"
    release = KueueRelease(folder, version)
    manifests = folder / "manifests.yaml"
    if not os.access(release.manager, os.X_OK) or not manifests.is_file():
        raise AssetsMissing(
            f"no Kueue {version} in {folder}: the platform admits its Jobs through Kueue, which the "
            f"rehearsal runs; build it with scripts/build-control-plane kueue-v{version} (needs Go and the Go module proxy)"
        )
    return release


def _configuration(text: str, ports: dict[str, int]) -> str:
    config: dict[str, Any] = yaml.load(text, Loader=yaml.CSafeLoader) or {}
    config.setdefault("health", {})["healthProbeBindAddress"] = f":{ports['health']}"
    config.setdefault("metrics", {})["bindAddress"] = f":{ports['metrics']}"
    config.setdefault("webhook", {})["port"] = ports["webhook"]
    config["visibilityServer"] = {"bindPort": ports["visibility"]}
    config.setdefault("featureGates", {})["VisibilityOnDemand"] = False
    return dump_yaml(config)


def _moved(port: Any, ports: dict[str, int]) -> Any:
    return ports[_PORTS[port]] if isinstance(port, int) and port in _PORTS else port


def _namespaced(obj: Obj, namespace: str) -> None:
    meta = obj["metadata"]
    if meta.get("namespace") == _RELEASE_NAMESPACE:
        meta["namespace"] = namespace
    if obj["kind"] == "Namespace" and meta["name"] == _RELEASE_NAMESPACE:
        meta["name"] = namespace
    for subject in obj.get("subjects") or []:
        if subject.get("namespace") == _RELEASE_NAMESPACE:
            subject["namespace"] = namespace
    for hook in obj.get("webhooks") or []:
        service = hook.get("clientConfig", {}).get("service") or {}
        if service.get("namespace") == _RELEASE_NAMESPACE:
            service["namespace"] = namespace
        for expression in (hook.get("namespaceSelector") or {}).get("matchExpressions") or []:
            values = expression.get("values") or []
            expression["values"] = [namespace if v == _RELEASE_NAMESPACE else v for v in values]
    conversion = (((obj.get("spec") or {}).get("conversion") or {}).get("webhook") or {}).get("clientConfig")
    service = (conversion or {}).get("service") or {}
    if service.get("namespace") == _RELEASE_NAMESPACE:
        service["namespace"] = namespace


def kueue_install(release: KueueRelease, namespace: str, ports: list[int]) -> list[Obj]:
    """The release's install for the rehearsal (see the module's docstring); `ports` are four free
    loopback ports for health, metrics, webhooks and visibility."""
    moved = dict(zip(_PORTS.values(), ports, strict=True))
    out = []
    for obj in release.manifests():
        if obj["kind"] == "APIService":
            continue
        _namespaced(obj, namespace)
        if obj["kind"] == "ConfigMap" and obj["metadata"]["name"] == KUEUE_CONFIGMAP:
            obj["data"][KUEUE_CONFIG_KEY] = _configuration(obj["data"][KUEUE_CONFIG_KEY], moved)
        elif obj["kind"] == "Service":
            for port in obj["spec"].get("ports") or []:
                port["targetPort"] = _moved(port.get("targetPort"), moved)
        elif obj["kind"] == "Deployment":
            obj["spec"]["strategy"] = {"type": "Recreate"}
            for container in obj["spec"]["template"]["spec"]["containers"]:
                for port in container.get("ports") or []:
                    port["containerPort"] = _moved(port["containerPort"], moved)
                for probe in (container.get(k) for k in ("livenessProbe", "readinessProbe")):
                    if probe and "httpGet" in probe:
                        probe["httpGet"]["port"] = _moved(probe["httpGet"]["port"], moved)
        out.append(obj)
    return out


def install_kueue(cluster: Rehearsal, kueue: Kueue) -> None:
    """Install the spec's Kueue release on the rehearsal cluster and wait until its manager is Ready
    and its webhook Service has the endpoint the apiserver calls (in wall time: its start is its
    own, not the cluster's store), as whoever installs Kueue waits before using it. WaitFailed with
    the manager's log if not."""
    release = find_kueue(str(kueue.version))
    cluster.launcher.images[release.image] = release.manager
    cluster.pending.append(lambda: kueue_undecided(cluster.client))
    cluster.apply(kueue_install(release, kueue.namespace, free_ports(len(_PORTS))), "kueue-install")
    deadline = time.monotonic() + _READY
    ready = cluster.kubectl(
        ["-n", kueue.namespace, "rollout", "status", _MANAGER, f"--timeout={_READY}s"], check=False
    )
    while ready.returncode == 0 and time.monotonic() < deadline:
        if _served(cluster, kueue.namespace):
            return
        time.sleep(0.2)
    logs = cluster.kubectl(["-n", kueue.namespace, "logs", _MANAGER, "--tail=20"], check=False)
    raise WaitFailed(
        f"Kueue {release.version}'s manager Ready and its webhooks served: "
        f"{ready.stderr.strip() or 'no ready endpoint'}\n{logs.stdout.strip()}"
    )


def _served(cluster: Rehearsal, namespace: str) -> bool:
    """The webhook Service has a ready endpoint, through which the apiserver calls the webhooks."""
    out = cluster.kubectl(
        ["-n", namespace, "get", "endpointslices", f"-l=kubernetes.io/service-name={_WEBHOOK_SERVICE}",
         "-o", "jsonpath={.items[*].endpoints[?(@.conditions.ready==true)].addresses[0]}"],
        check=False,
    )  # fmt: skip
    return out.returncode == 0 and bool(out.stdout.strip())


def configure_kueue(cluster: Rehearsal, plan: Plan, wave: WaveState) -> str:
    """What Kueue's owner does when the runbook hands its Configuration off: `resources.deviceClassMappings`
    and `featureGates` as the hand-off of `wave` says (the mapping gone where the wave hands nothing
    off), written to the ConfigMap; the runbook's block then restarts the manager."""
    kueue = plan.platform.kueue
    assert kueue is not None
    config_map = cluster.get("ConfigMap", KUEUE_CONFIGMAP, kueue.namespace)
    if config_map is None:
        return f"no ConfigMap {kueue.namespace}/{KUEUE_CONFIGMAP} to configure"
    config: dict[str, Any] = yaml.load(config_map["data"][KUEUE_CONFIG_KEY], Loader=yaml.CSafeLoader) or {}
    handoff = kueue_configuration_handoff(plan, wave)
    resources = config.setdefault("resources", {})
    if handoff is None:
        resources.pop("deviceClassMappings", None)
        done = "removed the deviceClassMappings"
    else:
        spec = handoff["spec"]
        resources["deviceClassMappings"] = spec["resources"]["deviceClassMappings"]
        config.setdefault("featureGates", {}).update(spec["featureGates"])
        done = f"set the deviceClassMappings and featureGates of {wave.name}"
    body = {"data": {KUEUE_CONFIG_KEY: dump_yaml(config)}}
    cluster.apply(
        [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": KUEUE_CONFIGMAP, "namespace": kueue.namespace},
                **body,
            }
        ],
        "kueue-owner",
    )
    return f"Kueue's owner {done} in ConfigMap {kueue.namespace}/{KUEUE_CONFIGMAP}"


def team_queues(objects: list[Obj]) -> list[Obj]:
    """The team's queues before the first wave, from the first wave's rendered `objects`: its
    ResourceFlavors (without `nodeLabels`), ClusterQueues and LocalQueues (with their namespaces),
    as the team applied them (no product labels or annotations)."""
    out: list[Obj] = []
    for obj in objects:
        if obj.get("kind") not in ("ResourceFlavor", "ClusterQueue", "LocalQueue"):
            continue
        meta = {k: v for k, v in obj["metadata"].items() if k in ("name", "namespace")}
        spec = dict(obj.get("spec") or {})
        if obj["kind"] == "ResourceFlavor":
            spec.pop("nodeLabels", None)
        if "namespace" in meta:
            out.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": meta["namespace"]}})
        out.append({"apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": meta, "spec": spec})
    order = {"Namespace": 0, "ResourceFlavor": 1, "ClusterQueue": 2, "LocalQueue": 3}
    unique = {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in out}
    return sorted(unique.values(), key=lambda o: order[o["kind"]])


def _finished(job: Obj) -> bool:
    return any(
        c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
        for c in (job.get("status") or {}).get("conditions") or []
    )


def kueue_undecided(client: Client) -> str:
    """What Kueue has yet to decide, read from its objects ('' when nothing): a queued Job without
    its Workload, a Workload not judged (no QuotaReserved condition), or a Job whose `suspend` does
    not follow its Workload's admission yet (Kueue's job reconciler suspends and resumes it)."""
    workloads: dict[str, Obj] = {}
    for item in client.list("Workload"):
        for ref in item["metadata"].get("ownerReferences") or []:
            if ref.get("kind") == "Job":
                workloads[str(ref.get("uid"))] = item
    for job in client.list("Job"):
        meta = job["metadata"]
        if QUEUE_LABEL not in (meta.get("labels") or {}) or meta.get("deletionTimestamp") or _finished(job):
            continue
        name = f"{meta['namespace']}/{meta['name']}"
        found = workloads.get(str(meta["uid"]))
        if found is None:
            return f"Kueue: Job {name} has no Workload yet"
        conditions = {c["type"]: c["status"] for c in (found.get("status") or {}).get("conditions") or []}
        admitted = conditions.get("Admitted") == "True"
        if admitted == bool(job["spec"].get("suspend")):
            return f"Kueue: Job {name} is {'admitted but suspended' if admitted else 'running unadmitted'}"
        if "QuotaReserved" not in conditions:
            return f"Kueue: the Workload of Job {name} is not judged yet"
    return ""
