"""The NIM Operator in the rehearsal, emulated, and what the owners of NIM services do.

NVIDIA/k8s-nim-operator is not served by the Go module proxy (403), so the rehearsal cannot build
it as it builds Kueue. `NimOperator` does what its NIMService reconciler does at v3.1.2
(`internal/controller/platform/standalone/nimservice.go`, `internal/shared/resourceclaims.go`), for
what the migration relies on:
- a ServiceAccount and a Service named after the NIMService;
- its NIMCache (`spec.storage.nimCache.name`): missing, the service fails (`NIMCacheNotFound`);
  not Ready, the service is NotReady and gets no Deployment;
- each `draResources[].claimCreationSpec` becomes a ResourceClaimTemplate
  `<generateName|claimtemplate>-<hash12(name)>-<index>` whose devices select
  `device.driver == "<driverName>"` and the selectors' CEL (`GetDRADeviceCELExpressions`, as
  `render/nim_cel.py` writes them); a `resourceClaimName` or `resourceClaimTemplateName` is used as
  named. Each becomes a pod claim `claim-<hash12(name)>-<field type>-<hash12(resource)>-<n>`
  referenced by the container (`GetPodResourceClaims`, `UpdateContainerResourceClaims`);
- a Deployment named after it (`manifests/deployment.yaml`): pods labelled `app: <name>`, rolling
  with `maxSurge: 0`, `spec.replicas`, `resources`, `nodeSelector`, `tolerations` and `affinity`
  as written, in a container `<name>-ctr`;
- `status.state` Ready once the Deployment rolled out (`isDeploymentReady`), else NotReady.
Everything it creates has the NIMService as controller owner, so deleting the service lets the
garbage collector remove them. Probes, the Role and RoleBinding, ingress, metrics and autoscaling
are left out: the emulated kubelet serves no model, and nothing the product ships reads them.

A NIMCache is Ready once it exists: its caching Job downloads a model, which needs no GPU and
decides nothing of the migration.

The owners: before the migration each replaced service runs on the device plugin (its NIMCache
with it), built from the spec as `workloads.py` builds a legacy workload; when the runbook hands
them a step (`NimHeads`), they create a new service's NIMCache, create a template-mode service from
the one it replaces with the hand-off's `draResources` (`convert/nimservice.py`, the product's own
conversion), or bring a retired one back.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from gpuplatform.convert.nimservice import convert_nimservice
from gpuplatform.labels import GPU_RESOURCE
from gpuplatform.model.workloads import AttributeSelector, CapacitySelector, NimService
from gpuplatform.output.yaml import dump_yaml
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.rehearse.client import ApiError, Client, Obj
from gpuplatform.rehearse.cluster import Rehearsal
from gpuplatform.rehearse.crds import permissive_crd
from gpuplatform.rehearse.workloads import Declared
from gpuplatform.render.meta import file_name
from gpuplatform.render.nim import nim_cache, render_nim_handoffs
from gpuplatform.render.nim_cel import attribute_expression, capacity_expression, go_quote
from gpuplatform.render.runbook_owners import NimHeads
from gpuplatform.render.tree import Tree

__all__ = ["NIM_API", "NimOperator", "NimOwners", "install_nim_operator"]

NIM_API = "apps.nvidia.com/v1alpha1"
_OPERATOR = "k8s-nim-operator"
_OWNER = "rehearsal-owner"
_HASH = "nvidia.com/parent-spec-hash"
_IMAGE = "nvcr.io/nim/rehearsal:latest"
#: `k8s.io/apimachinery/pkg/util/rand.SafeEncodeString`'s alphabet (no vowels, no look-alikes).
_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"
#: What the operator creates for a service (all of them owned by it).
_OWNED_KINDS = ("ServiceAccount", "Service", "ResourceClaimTemplate", "Deployment")
#: `DraResourceFieldType`: the index a pod claim's name carries.
_CLAIM, _CLAIM_TEMPLATE = 0, 1


def _hash12(text: str) -> str:
    """`utils.GetTruncatedStringHash(text, 12)`: FNV-32a, in decimal, safe-encoded, cut to 12."""
    value = 0x811C9DC5
    for byte in text.encode():
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return "".join(_ALPHANUMS[ord(c) % len(_ALPHANUMS)] for c in str(value))[:12]


def _selector(item: dict[str, Any], kind: str, driver: str) -> str | None:
    """One `attributeSelectors`/`capacitySelectors` item of a live NIMService as its CEL."""
    op = item.get("op", "Equal")
    if kind == "capacity":
        return capacity_expression(CapacitySelector(key=item["key"], op=op, value=str(item["value"])), driver)
    [(typed, value)] = dict(item["value"]).items()
    selector = AttributeSelector(key=item["key"], op=op, value=value, value_type=typed.removesuffix("Value"))
    return attribute_expression(selector, driver)


def _device(device: dict[str, Any]) -> Obj:
    """A claimCreationSpec device as the template's request (`GetDRADeviceCELExpressions`)."""
    driver = str(device.get("driverName", "gpu.nvidia.com"))
    expressions = [f"device.driver == {go_quote(driver)}"]
    if device.get("celExpressions"):
        expressions += list(device["celExpressions"])
    else:
        for kind in ("attribute", "capacity"):
            for item in device.get(f"{kind}Selectors") or []:
                if (cel := _selector(item, kind, driver)) is not None:
                    expressions.append(cel)
    exactly: Obj = {
        "deviceClassName": device["deviceClassName"],
        "allocationMode": "ExactCount",
        "count": int(device.get("count", 1)),
        "selectors": [{"cel": {"expression": e}} for e in expressions],
    }
    return {"name": device.get("name", "gpu"), "exactly": exactly}


@dataclass(frozen=True)
class _Claim:
    pod_name: str
    """The pod's claim name."""
    resource: str
    """The ResourceClaim or ResourceClaimTemplate it names."""
    template: bool
    devices: tuple[Obj, ...] = ()
    """The devices of a template the operator creates (empty: the named one exists already)."""


def _claims(service: Obj) -> list[_Claim]:
    """`NewNamedDRAResourceList`: the service's DRA resources with their pod claim names."""
    name, seen, out = service["metadata"]["name"], dict[str, int](), []
    for idx, resource in enumerate(service["spec"].get("draResources") or []):
        devices: tuple[Obj, ...] = ()
        if resource.get("resourceClaimName"):
            field_type, target = _CLAIM, str(resource["resourceClaimName"])
        elif resource.get("resourceClaimTemplateName"):
            field_type, target = _CLAIM_TEMPLATE, str(resource["resourceClaimTemplateName"])
        else:
            spec = resource.get("claimCreationSpec") or {}
            prefix = spec.get("generateName") or "claimtemplate"
            field_type, target = _CLAIM_TEMPLATE, f"{prefix}-{_hash12(name)}-{idx}"
            devices = tuple(_device(d) for d in spec.get("devices") or [])
        unique = f"claim-{_hash12(name)}-{field_type}-{_hash12(target)}"
        seen[unique] = seen.get(unique, -1) + 1
        out.append(_Claim(f"{unique}-{seen[unique]}", target, field_type == _CLAIM_TEMPLATE, devices))
    return out


def _port(spec: Obj) -> int:
    """The service's API port (`spec.expose.service.port`; the CRD's default 8000)."""
    return int(((spec.get("expose") or {}).get("service") or {}).get("port") or 8000)


def _cache_name(spec: Obj) -> str:
    """The NIMCache the service mounts (`spec.storage.nimCache.name`; '' for none)."""
    return str(((spec.get("storage") or {}).get("nimCache") or {}).get("name") or "")


def _owned(service: Obj, api: str, kind: str, spec_key: str, spec: Obj, labels: dict[str, str]) -> Obj:
    meta = service["metadata"]
    owner = {
        "apiVersion": NIM_API,
        "kind": "NIMService",
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    body = {spec_key: spec} if spec_key else spec
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]
    return {
        "apiVersion": api,
        "kind": kind,
        "metadata": {
            "name": meta["name"],
            "namespace": meta["namespace"],
            "labels": labels,
            "annotations": {_HASH: digest},
            "ownerReferences": [owner],
        },
        **body,
    }


def _objects(service: Obj) -> list[Obj]:
    """What the operator keeps in place for a service whose NIMCache is Ready."""
    meta, spec = service["metadata"], service["spec"]
    name = meta["name"]
    labels = {
        "app.kubernetes.io/name": name,
        "app.kubernetes.io/instance": name,
        "app.kubernetes.io/part-of": "nim-service",
        "app.kubernetes.io/managed-by": _OPERATOR,
        **dict(spec.get("labels") or {}),
    }
    claims = _claims(service)
    out: list[Obj] = []
    for claim in claims:
        if claim.devices:
            template = _owned(
                service,
                "resource.k8s.io/v1",
                "ResourceClaimTemplate",
                "spec",
                {"spec": {"devices": {"requests": list(claim.devices)}}},
                labels,
            )
            template["metadata"]["name"] = claim.resource
            out.append(template)
    port = _port(spec)
    container: Obj = {
        "name": f"{name}-ctr",
        "image": _IMAGE,
        "ports": [{"name": "api", "containerPort": port, "protocol": "TCP"}],
    }
    resources = json.loads(json.dumps(spec.get("resources") or {}))
    if claims:
        resources["claims"] = [{"name": c.pod_name} for c in claims]
    if resources:
        container["resources"] = resources
    pod: Obj = {"serviceAccountName": name, "containers": [container]}
    for key in ("nodeSelector", "tolerations", "affinity"):
        if spec.get(key):
            pod[key] = spec[key]
    if claims:
        pod["resourceClaims"] = [
            {
                "name": c.pod_name,
                ("resourceClaimTemplateName" if c.template else "resourceClaimName"): c.resource,
            }
            for c in claims
        ]
    deployment = {
        "replicas": int(spec.get("replicas", 1)),
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": 0}},
        "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name, **labels}}, "spec": pod},
    }
    out.append(_owned(service, "apps/v1", "Deployment", "spec", deployment, labels))
    return out


def _service_objects(service: Obj) -> list[Obj]:
    """The ServiceAccount and the Service, made whatever the NIMCache's state."""
    name = service["metadata"]["name"]
    port = _port(service["spec"])
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/managed-by": _OPERATOR}
    account = _owned(service, "v1", "ServiceAccount", "", {}, labels)
    spec = {"selector": {"app": name}, "ports": [{"name": "api", "port": port, "targetPort": port}]}
    return [account, _owned(service, "v1", "Service", "spec", spec, labels)]


@dataclass
class NimOperator:
    """The NIM Operator's NIMService and NIMCache reconcilers, one pass at a time."""

    client: Client

    def reconcile(self) -> bool:
        """One pass over every NIMCache and NIMService; True when it wrote. It reads lists only (a
        pass over a store that has not changed is answered from the last one: `Client.pinned`)."""
        wrote = False
        caches: dict[tuple[str, str], str] = {}
        for cache in self.client.list("NIMCache"):
            meta = cache["metadata"]
            state = str((cache.get("status") or {}).get("state", ""))
            if state != "Ready" and not meta.get("deletionTimestamp"):
                self._status("NIMCache", cache, {"state": "Ready"})
                state, wrote = "Ready", True
            caches[(meta["namespace"], meta["name"])] = state
        services = self.client.list("NIMService")
        if not services:
            return wrote
        live: dict[tuple[str, str, str], Obj] = {
            (kind, o["metadata"]["namespace"], o["metadata"]["name"]): o
            for kind in _OWNED_KINDS
            for o in self.client.list(kind)
        }
        for service in services:
            if not service["metadata"].get("deletionTimestamp"):
                wrote |= self._service(service, caches, live)
        return wrote

    def _service(
        self, service: Obj, caches: dict[tuple[str, str], str], live: dict[tuple[str, str, str], Obj]
    ) -> bool:
        meta = service["metadata"]
        ns, name = meta["namespace"], meta["name"]
        wrote = any([self._ensure(o, live) for o in _service_objects(service)])
        cache = _cache_name(service["spec"])
        if cache and (ns, cache) not in caches:
            return self._state(service, "Failed", f"NIMCache {cache} not found") or wrote
        if cache and caches[(ns, cache)] != "Ready":
            return self._state(service, "NotReady", f"NIMCache {cache} not ready") or wrote
        wrote |= any([self._ensure(o, live) for o in _objects(service)])
        ready, message = _rolled_out(live.get(("Deployment", ns, name)))
        return self._state(service, "Ready" if ready else "NotReady", message) or wrote

    def _ensure(self, obj: Obj, live: dict[tuple[str, str, str], Obj]) -> bool:
        """Create or update `obj` when the live one lacks its spec hash; True when it wrote."""
        meta = obj["metadata"]
        found = live.get((obj["kind"], meta["namespace"], meta["name"]))
        if (
            found is not None
            and (found["metadata"].get("annotations") or {}).get(_HASH) == meta["annotations"][_HASH]
        ):
            return False
        try:
            self.client.apply(obj["kind"], obj, _OPERATOR, api_version=obj["apiVersion"])
        except ApiError as exc:
            if exc.status not in (404, 409, 422):
                raise
            return False  # its namespace is going, or admission refused it: the next pass tries again
        return True

    def _state(self, service: Obj, state: str, message: str) -> bool:
        status = service.get("status") or {}
        if status.get("state") == state:
            return False
        condition = {
            "type": "NIM_SERVICE_READY",
            "status": "True" if state == "Ready" else "False",
            "reason": state,
            "message": message,
        }
        self._status("NIMService", service, {"state": state, "conditions": [condition]})
        return True

    def _status(self, kind: str, obj: Obj, status: Obj) -> None:
        meta = obj["metadata"]
        body = {
            "apiVersion": NIM_API,
            "kind": kind,
            "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
        }
        try:
            self.client.apply(kind, {**body, "status": status}, _OPERATOR, status=True, api_version=NIM_API)
        except ApiError as exc:
            if exc.status != 404:
                raise


def _rolled_out(deployment: Obj | None) -> tuple[bool, str]:
    """`isDeploymentReady`: every replica updated and available."""
    if deployment is None:
        return False, "deployment not found"
    name = deployment["metadata"]["name"]
    replicas = int(deployment["spec"].get("replicas", 1))
    status = deployment.get("status") or {}
    if replicas == 0:
        return False, f'deployment "{name}" is scaled down'
    if int(status.get("updatedReplicas", 0)) < replicas or deployment["metadata"].get(
        "generation"
    ) != status.get("observedGeneration"):
        return False, f'Waiting for deployment "{name}" rollout to finish'
    if int(status.get("availableReplicas", 0)) < int(status.get("updatedReplicas", 0)):
        return False, f'Waiting for deployment "{name}" rollout to finish'
    return True, f'deployment "{name}" successfully rolled out'


def install_nim_operator(cluster: Rehearsal) -> None:
    """The NIM Operator's CRDs served, and its reconcilers in the cluster's loop."""
    group, version = NIM_API.split("/")
    crds = [permissive_crd(group, [version], kind, kind.lower() + "s") for kind in ("NIMService", "NIMCache")]
    cluster.serve(crds, ["NIMService", "NIMCache"], "nim-operator-install")
    cluster.controllers.append(NimOperator(cluster.client).reconcile)


@dataclass
class NimOwners:
    """The teams that own the NIM services, acting on the rehearsal cluster."""

    cluster: Rehearsal
    plan: Plan
    tree: Tree
    manifests: Mapping[str, str] = field(default_factory=dict)
    """The teams' own manifests the spec names (`LoadedPlatform.manifests`)."""

    def start(self) -> list[str]:
        """Before the migration: every replaced service runs on the device plugin, with its NIMCache."""
        done = []
        for nim in self.plan.platform.nim_services:
            if nim.replaces:
                self.cluster.apply([_namespace(nim.namespace), *self._legacy(nim)], _OWNER)
                done.append(f"NIMService {nim.namespace}/{nim.replaces} runs on nvidia.com/gpu")
        return done

    def _legacy(self, nim: NimService) -> list[Obj]:
        """The replaced service as its team runs it (its manifest where the spec names one), with its
        NIMCache."""
        assert nim.replaces is not None
        meta = {"name": nim.replaces, "namespace": nim.namespace}
        written = self.manifests.get(nim.manifest) if nim.manifest else None
        service: Obj = next(
            (
                d
                for d in yaml.safe_load_all(written or "")
                if isinstance(d, dict) and d.get("kind") == "NIMService"
            ),
            {
                "apiVersion": NIM_API,
                "kind": "NIMService",
                "metadata": meta,
                "spec": {
                    "image": {"repository": "nvcr.io/nim/rehearsal", "tag": "latest"},
                    "storage": {"nimCache": {"name": nim.replaces}},
                    "replicas": nim.replicas,
                    "resources": {"limits": {GPU_RESOURCE: nim.count}},
                    "expose": {"service": {"type": "ClusterIP", "port": 8000}},
                },
            },
        )
        # the namespace `kubectl -n <namespace> apply` puts it in
        service["metadata"].setdefault("namespace", nim.namespace)
        cache_name = _cache_name(service["spec"])
        cache_meta = {"name": cache_name, "namespace": nim.namespace}
        caches = [{"apiVersion": NIM_API, "kind": "NIMCache", "metadata": cache_meta, "spec": {}}]
        return [*(caches if cache_name else []), service]

    def declared(self, state: WaveState) -> list[Declared]:
        """The services of `state` that must keep running: a replaced one up to the wave of its move
        (the next wave's runbook retires it), the new one from that wave on."""
        out = []
        for nim in self.plan.platform.nim_services:
            moved = nim.name in state.nim_services
            if nim.replaces and (not moved or state.name == nim.moves_in):
                out.append(Declared("NIMService", nim.namespace, nim.replaces, nim.replicas))
            if moved:
                out.append(Declared("NIMService", nim.namespace, nim.name, nim.replicas))
        return out

    def moving(self, a: WaveState, b: WaveState) -> set[str]:
        """`namespace/name` of the services `a` -> `b` creates, retires or brings back."""
        was = {f"{d.namespace}/{d.name}" for d in self.declared(a)}
        return was ^ {f"{d.namespace}/{d.name}" for d in self.declared(b)}

    def act(self, text: str, b: WaveState) -> list[str]:
        """The owners' part of a runbook item whose text begins with one of `NimHeads`."""
        done = []
        for nim in self.plan.platform.nim_services:
            if text.startswith(NimHeads.cache(nim)):
                meta = {"name": nim_cache(nim), "namespace": nim.namespace}
                self.cluster.apply(
                    [{"apiVersion": NIM_API, "kind": "NIMCache", "metadata": meta, "spec": {}}], _OWNER
                )
                done.append(f"NIMCache {nim.namespace}/{nim_cache(nim)} created")
            elif text.startswith(NimHeads.create(nim)) and not nim.manifest:
                self.cluster.apply([self._successor(nim, b)], _OWNER)
                done.append(f"NIMService {nim.namespace}/{nim.name} created from {nim.replaces}")
            elif text.startswith(NimHeads.restore(nim)):
                self.cluster.apply(self._legacy(nim), _OWNER)
                done.append(f"NIMService {nim.namespace}/{nim.replaces} re-applied")
        return done

    def _successor(self, nim: NimService, b: WaveState) -> Obj:
        """A template-mode service: the one it replaces, converted with the hand-off's resources."""
        [handoff] = [o for o in render_nim_handoffs(self.plan, b) if o["metadata"]["name"] == nim.name]
        written = self.tree.files[f"handoff/{b.dir_name}/{file_name(handoff)}"]  # as the tree has it
        assert isinstance(written, list)
        spec = written[0]["spec"]
        legacy = self.cluster.get("NIMService", str(nim.replaces), nim.namespace) if nim.replaces else None
        source = legacy or self._legacy(nim)[-1]
        text = dump_yaml(
            {
                "apiVersion": NIM_API,
                "kind": "NIMService",
                "metadata": {"name": source["metadata"]["name"], "namespace": nim.namespace},
                "spec": source["spec"],
            }
        )
        converted: Obj = yaml.safe_load(
            convert_nimservice(
                text,
                f"NIMService {nim.namespace}/{nim.replaces}",
                nim.name,
                spec["draResources"],
                spec["nimCache"],
                spec["tolerations"],
            )
        )
        return converted


def _namespace(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
