"""A small Kubernetes API client for the emulated node agents and the engines (stdlib HTTP, JSON).

The shipped programs talk to the apiserver through the real `kubectl`; this client is only for what
the emulation itself does: a kubelet's status writes, a driver's ResourceSlices, an engine's status
writes and prunes. Kinds beyond its table (the engines' custom resources) are found the way kubectl
finds them, by the apiserver's discovery of their group version.
"""

from __future__ import annotations

import http.client
import ssl
import threading
import urllib.parse
from collections import defaultdict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

__all__ = ["ApiError", "Client", "Resource", "resource_path"]

Obj = dict[str, Any]

#: kind -> (API prefix, plural, namespaced) for the kinds the rehearsal reads and writes itself.
_KINDS: dict[str, tuple[str, str, bool]] = {
    "Node": ("/api/v1", "nodes", False),
    "Pod": ("/api/v1", "pods", True),
    "Namespace": ("/api/v1", "namespaces", False),
    "ServiceAccount": ("/api/v1", "serviceaccounts", True),
    "Service": ("/api/v1", "services", True),
    "ConfigMap": ("/api/v1", "configmaps", True),
    "Secret": ("/api/v1", "secrets", True),
    "ResourceQuota": ("/api/v1", "resourcequotas", True),
    "DaemonSet": ("/apis/apps/v1", "daemonsets", True),
    "Deployment": ("/apis/apps/v1", "deployments", True),
    "ReplicaSet": ("/apis/apps/v1", "replicasets", True),
    "StatefulSet": ("/apis/apps/v1", "statefulsets", True),
    "Job": ("/apis/batch/v1", "jobs", True),
    "CronJob": ("/apis/batch/v1", "cronjobs", True),
    "ResourceSlice": ("/apis/resource.k8s.io/v1", "resourceslices", False),
    "ResourceClaim": ("/apis/resource.k8s.io/v1", "resourceclaims", True),
    "ResourceClaimTemplate": ("/apis/resource.k8s.io/v1", "resourceclaimtemplates", True),
    "DeviceClass": ("/apis/resource.k8s.io/v1", "deviceclasses", False),
    "PodDisruptionBudget": ("/apis/policy/v1", "poddisruptionbudgets", True),
    "Workload": ("/apis/kueue.x-k8s.io/v1beta2", "workloads", True),
    "NIMService": ("/apis/apps.nvidia.com/v1alpha1", "nimservices", True),
    "NIMCache": ("/apis/apps.nvidia.com/v1alpha1", "nimcaches", True),
    "NodePool": ("/apis/karpenter.sh/v1", "nodepools", False),
    "NodeClaim": ("/apis/karpenter.sh/v1", "nodeclaims", False),
}


class ApiError(Exception):
    """A request the apiserver refused: status code and its message."""

    def __init__(self, status: int, message: str, reason: str = "") -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status, self.message, self.reason = status, message, reason


def resource_path(kind: str, namespace: str = "", name: str = "") -> str:
    """The REST path of a kind this client knows (`/api/v1/namespaces/ns/pods/name`)."""
    prefix, plural, namespaced = _KINDS[kind]
    return Resource(prefix, plural, namespaced).path(namespace, name)


@dataclass(frozen=True)
class Resource:
    """A kind as the apiserver serves it: its group version's path, plural, scope and subresources."""

    prefix: str
    plural: str
    namespaced: bool
    subresources: frozenset[str] = frozenset()

    def path(self, namespace: str = "", name: str = "", subresource: str = "") -> str:
        scope = f"/namespaces/{namespace}" if self.namespaced and namespace else ""
        return f"{self.prefix}{scope}/{self.plural}" + "".join(f"/{p}" for p in (name, subresource) if p)


@dataclass
class Client:
    """The admin's (or another token's) connection to the rehearsal apiserver."""

    server: str
    token: str
    ca_file: Path

    def __post_init__(self) -> None:
        self._local = threading.local()
        self._context = ssl.create_default_context(cafile=str(self.ca_file))
        parsed = urllib.parse.urlparse(self.server)
        self._host, self._port = parsed.hostname or "127.0.0.1", parsed.port or 443
        self._served: dict[str, dict[str, Resource]] = {}
        self._lists: dict[tuple[str, str, tuple[tuple[str, str], ...]], tuple[str, list[Obj]]] = {}
        """(kind, namespace, params) -> (the store's revision it answered at, its items): `pinned`."""

    def _connection(self) -> http.client.HTTPSConnection:
        conn: http.client.HTTPSConnection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = http.client.HTTPSConnection(self._host, self._port, context=self._context, timeout=60)
            self._local.conn = conn
        return conn

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        params: Mapping[str, str] | None = None,
        content_type: str = "application/json",
    ) -> Any:
        """One request; the decoded JSON answer, or ApiError."""
        url = path + ("?" + urllib.parse.urlencode(params) if params else "")
        data = None if body is None else orjson.dumps(body)
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = content_type
        for attempt in (0, 1):
            conn = self._connection()
            try:
                conn.request(method, url, body=data, headers=headers)
                answer = conn.getresponse()
                raw = answer.read()
                break
            except (http.client.HTTPException, OSError):
                conn.close()
                self._local.conn = None
                if attempt:
                    raise
        try:
            decoded = orjson.loads(raw) if raw else {}
        except orjson.JSONDecodeError:
            if answer.status < 400:
                raise
            decoded = {}  # a path not served yet answers in plain text ("404 page not found")
        if answer.status >= 400:
            message = decoded.get("message") or raw[:200].decode(errors="replace")
            raise ApiError(answer.status, str(message), str(decoded.get("reason", "")))
        return decoded

    def resource(self, api_version: str, kind: str) -> Resource:
        """`kind` of `api_version` as the apiserver's discovery serves it: read once per group version,
        again when the kind is new to it (a CRD installed since); ApiError 404 when it is not served."""
        served = self._served.get(api_version) or {}
        if kind not in served:
            served = self._served[api_version] = self._discover(api_version)
        if kind not in served:
            raise ApiError(404, f"the server does not serve {kind} of {api_version}", "NotFound")
        return served[kind]

    def _discover(self, api_version: str) -> dict[str, Resource]:
        prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        try:
            answer = self.request("GET", prefix)
        except ApiError as exc:
            if exc.status == 404:
                return {}
            raise
        kinds: dict[str, tuple[str, bool]] = {}
        subresources: defaultdict[str, set[str]] = defaultdict(set)
        for found in answer.get("resources") or []:
            plural, _, subresource = str(found["name"]).partition("/")
            if subresource:
                subresources[plural].add(subresource)
            else:
                kinds[found["kind"]] = (plural, bool(found["namespaced"]))
        return {
            kind: Resource(prefix, plural, namespaced, frozenset(subresources[plural]))
            for kind, (plural, namespaced) in kinds.items()
        }

    def _path(self, kind: str, namespace: str, name: str, api_version: str) -> str:
        if api_version:
            return self.resource(api_version, kind).path(namespace, name)
        return resource_path(kind, namespace, name)

    def get(self, kind: str, name: str, namespace: str = "", *, api_version: str = "") -> Obj | None:
        """The object, None when there is none (a kind not in the table needs its `api_version`)."""
        try:
            found: Obj = self.request("GET", self._path(kind, namespace, name, api_version))
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise
        return found

    def list(self, kind: str, namespace: str = "", **params: str) -> list[Obj]:
        """The items of `kind`; in a thread `pinned` to the store's revision, the answer of an
        earlier list at that revision when there is one (the items are shared: read, never change)."""
        pinned: str | None = getattr(self._local, "pinned", None)
        key = (kind, namespace, tuple(sorted(params.items())))
        if pinned is not None and (kept := self._lists.get(key)) is not None and kept[0] == pinned:
            return kept[1]
        answer = self.request("GET", resource_path(kind, namespace), params=params or None)
        items: list[Obj] = answer.get("items") or []
        prefix, _, _ = _KINDS[kind]
        version = prefix.removeprefix("/apis/").removeprefix("/api/")
        for item in items:
            item.setdefault("kind", kind)
            item.setdefault("apiVersion", version)
        if pinned is not None:
            # Kept under the pinned revision, not the list's own (which may be newer, as
            # controllers write between the two): a later pass pinned at that same revision
            # proves nothing was written since, so this list was the store then and is now.
            self._lists[key] = (pinned, items)
        return items

    @contextmanager
    def pinned(self, revision: str) -> Iterator[None]:
        """This thread's lists answered from its earlier ones while the store is at `revision`
        (`revision()`): a store whose revision has not moved has had nothing written, so a list
        answered at that revision is the list now. Other threads list as always."""
        self._local.pinned = revision
        try:
            yield
        finally:
            self._local.pinned = None

    def revision(self) -> str:
        """The store's newest resourceVersion (any list answers with it): changes whenever anything is written."""
        answer = self.request("GET", "/api/v1/namespaces", params={"limit": "1"})
        return str(answer.get("metadata", {}).get("resourceVersion", ""))

    def create(self, kind: str, obj: Obj, namespace: str = "") -> Obj:
        created: Obj = self.request("POST", resource_path(kind, namespace), obj)
        return created

    def patch(
        self,
        kind: str,
        name: str,
        patch: Obj,
        namespace: str = "",
        *,
        status: bool = False,
        strategic: bool = False,
    ) -> Obj:
        """A JSON merge patch, or a strategic merge patch (lists merge by their keys)."""
        path = resource_path(kind, namespace, name) + ("/status" if status else "")
        media = "application/strategic-merge-patch+json" if strategic else "application/merge-patch+json"
        patched: Obj = self.request("PATCH", path, patch, content_type=media)
        return patched

    def apply(
        self,
        kind: str,
        obj: Obj,
        manager: str,
        *,
        status: bool = False,
        force: bool = True,
        api_version: str = "",
    ) -> Obj:
        """Server-side apply of `obj` as field manager `manager` (a kind not in the table needs its
        `api_version`)."""
        meta = obj["metadata"]
        path = self._path(kind, meta.get("namespace", ""), meta["name"], api_version) + (
            "/status" if status else ""
        )
        params = {"fieldManager": manager, "force": "true" if force else "false"}
        applied: Obj = self.request(
            "PATCH", path, obj, params=params, content_type="application/apply-patch+yaml"
        )
        return applied

    def delete(
        self,
        kind: str,
        name: str,
        namespace: str = "",
        *,
        grace: int | None = None,
        uid: str = "",
        api_version: str = "",
        propagation: str = "",
    ) -> bool:
        """Delete (with the `propagation` policy for its dependents, else the kind's default); False
        when it was already gone."""
        body: Obj = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if propagation:
            body["propagationPolicy"] = propagation
        if grace is not None:
            body["gracePeriodSeconds"] = grace
        if uid:
            body["preconditions"] = {"uid": uid}
        try:
            self.request("DELETE", self._path(kind, namespace, name, api_version), body)
        except ApiError as exc:
            if exc.status in (404, 409):
                return False
            raise
        return True

    def evict(self, name: str, namespace: str) -> bool:
        """Evict a pod through the eviction API (a PodDisruptionBudget may refuse: 429); False when
        the pod is gone or a budget refused."""
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        try:
            self.request("POST", resource_path("Pod", namespace, name) + "/eviction", body)
        except ApiError as exc:
            if exc.status in (404, 429):
                return False
            raise
        return True

    def all_of(self, *kinds: str) -> Iterator[Obj]:
        for kind in kinds:
            yield from self.list(kind)
