"""What each chart version renders and reads, as data extracted from the real chart.

`helm` does not run at synth time, so the facts a renderer needs about a chart — the CRDs and kinds
it installs (and the values switches that add or remove them), its default values, the values paths
its templates read — are JSON per chart version in `charts/data/`, written by `extract.py` from the
chart itself (`scripts/chart-facts`). Tests extract them again from shared/reference/charts with
`helm template` and compare, so the data cannot drift from the charts silently.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any, Literal

from gpuplatform.versions import Release, parse_release

__all__ = [
    "CLUSTER_SCOPED_KINDS",
    "MISSING",
    "NAMESPACE",
    "RBAC_KINDS",
    "RELEASE",
    "ChartFacts",
    "ChartKind",
    "ChartRbac",
    "Component",
    "Match",
    "all_chart_facts",
    "chart_facts",
    "leaf_paths",
    "named",
    "value_at",
]

Component = Literal["gpu-operator", "dra-driver"]
#: In a name the facts record, the release's part (`<release>-node-feature-discovery`).
RELEASE = "{release}"
#: In a name the facts record, the release namespace's part.
NAMESPACE = "{namespace}"
#: Kinds recorded by name, with their rules or the role they bind: the sync identity holds what a
#: chart's roles grant and the AppProject names them (render/sync_identity.py).
RBAC_KINDS: frozenset[tuple[str, str]] = frozenset(
    ("rbac.authorization.k8s.io", k) for k in ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
)
Path = tuple[str, ...]
MISSING: Any = object()

#: Built-in and well-known cluster-scoped kinds; a chart's own CRDs declare the scope of theirs.
CLUSTER_SCOPED_KINDS: frozenset[tuple[str, str]] = frozenset(
    {
        ("", "Namespace"),
        ("", "Node"),
        ("", "PersistentVolume"),
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("apiregistration.k8s.io", "APIService"),
        ("admissionregistration.k8s.io", "MutatingAdmissionPolicy"),
        ("admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding"),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
        ("cert-manager.io", "ClusterIssuer"),
        ("certificates.k8s.io", "CertificateSigningRequest"),
        ("networking.k8s.io", "IngressClass"),
        ("node.k8s.io", "RuntimeClass"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("resource.k8s.io", "DeviceClass"),
        ("resource.k8s.io", "DeviceTaintRule"),
        ("resource.k8s.io", "ResourceSlice"),
        ("scheduling.k8s.io", "PriorityClass"),
        ("security.openshift.io", "SecurityContextConstraints"),
        ("storage.k8s.io", "CSIDriver"),
        ("storage.k8s.io", "CSINode"),
        ("storage.k8s.io", "StorageClass"),
        ("storage.k8s.io", "VolumeAttachment"),
    }
)


def named(template: str, release: str, namespace: str) -> str:
    """A name the facts record, in release `release` in `namespace`."""
    return template.replace(RELEASE, release).replace(NAMESPACE, namespace)


def value_at(values: Any, path: Path) -> Any:
    """The value at `path` in nested mappings, or MISSING."""
    for key in path:
        if not isinstance(values, Mapping) or key not in values:
            return MISSING
        values = values[key]
    return values


def leaf_paths(values: Any, prefix: Path = ()) -> Iterator[tuple[Path, Any]]:
    """(path, value) of every leaf: scalars, lists and empty mappings; mappings are descended."""
    if isinstance(values, Mapping) and values:
        for key, value in values.items():
            yield from leaf_paths(value, (*prefix, str(key)))
    elif prefix:
        yield prefix, values


@dataclass(frozen=True)
class ChartKind:
    """A kind the chart installs (CRDs by name), and the values toggles that add or remove it."""

    group: str
    kind: str
    namespaced: bool
    name: str = ""
    only_with: tuple[str, ...] = ()
    """Rendered only when one of these toggles is applied."""
    absent_with: tuple[str, ...] = ()
    """Not rendered when any of these toggles is applied."""

    def named(self, release: str, namespace: str) -> str:
        """The object's name in release `release` in `namespace` ("" when the facts name none)."""
        return named(self.name, release, namespace)


#: Values keys that rename a chart's objects (Helm's `<chart>.fullname` convention).
_RENAMING = frozenset({"nameOverride", "fullnameOverride"})


@dataclass
class ChartRbac:
    """What a release grants: its roles (kind, name or "" when unknown, rules), its bindings (kind,
    name) and the roles they bind (kind, name)."""

    roles: list[tuple[str, str, tuple[Mapping[str, Any], ...]]] = field(default_factory=list)
    bindings: list[tuple[str, str]] = field(default_factory=list)
    bound: set[tuple[str, str]] = field(default_factory=set)


@dataclass(frozen=True)
class ChartFacts:
    """One chart version: where it is published, what it renders and which values it reads."""

    component: Component
    chart: str
    version: str
    repository: str
    """The published location (`oci://…` or `https://…`); a spec may name a mirror instead."""
    defaults: dict[str, Any]
    """values.yaml, subcharts' values coalesced under their key, as Helm does."""
    reads: frozenset[Path]
    """Values paths the templates reference (`.Values.a.b`); a subtree is read when its prefix is."""
    toggles: dict[str, dict[Path, Any]]
    objects: tuple[ChartKind, ...]
    extra_objects: str = ""
    """Top-level values key whose list items the chart renders verbatim (`extraObjects`)."""
    roles: Mapping[str, tuple[Mapping[str, Any], ...]] = field(default_factory=dict)
    """`Kind/name` of each Role and ClusterRole (name with `RELEASE`) -> its rules."""
    bindings: Mapping[str, str] = field(default_factory=dict)
    """`Kind/name` of each RoleBinding and ClusterRoleBinding -> the `Kind/name` of its role."""

    @property
    def release(self) -> Release:
        return parse_release(self.version)

    def default(self, path: Path) -> Any:
        """The chart's default at `path` (MISSING when it has none)."""
        return value_at(self.defaults, path)

    def effective(self, values: Mapping[str, Any], path: Path) -> Any:
        """The value Helm uses at `path`: the given value, else the chart's default."""
        given = value_at(values, path)
        return self.default(path) if given is MISSING else given

    def reads_path(self, path: Path) -> bool:
        """Whether the templates read `path` (or a subtree containing it)."""
        return any(path[: len(r)] == r for r in self.reads)

    def applied(self, toggle: str, values: Mapping[str, Any]) -> bool:
        """Whether `values` switch `toggle` on (every path of the toggle has its value)."""
        return all(self.effective(values, p) == v for p, v in self.toggles[toggle].items())

    def installs(self, values: Mapping[str, Any]) -> list[ChartKind]:
        """The kinds (CRDs by name) the chart renders with `values`, incl. dict `extraObjects`."""
        on = {t for t in self.toggles if self.applied(t, values)}
        kinds = [
            k
            for k in self.objects
            if (not k.only_with or on & set(k.only_with)) and not on & set(k.absent_with)
        ]
        extra = value_at(values, (self.extra_objects,)) if self.extra_objects else MISSING
        for item in extra if isinstance(extra, list) else []:
            if isinstance(item, Mapping) and isinstance(item.get("kind"), str):
                api = str(item.get("apiVersion", ""))
                group = api.rsplit("/", 1)[0] if "/" in api else ""
                meta = item.get("metadata")
                has_namespace = isinstance(meta, Mapping) and "namespace" in meta
                namespaced = (group, item["kind"]) not in self.cluster_scoped() or has_namespace
                kinds.append(ChartKind(group, item["kind"], namespaced))
        return kinds

    def rbac(self, values: Mapping[str, Any], release: str, namespace: str) -> ChartRbac:
        """The roles (with their rules) and bindings the chart renders with `values` as `release` in
        `namespace`, `extraObjects` included. Names are "" when the values rename the chart's objects
        (`nameOverride`, `fullnameOverride`): the facts know the names of the default only."""
        renamed = any(p[-1] in _RENAMING and v for p, v in leaf_paths(values))
        out = ChartRbac()
        for kind in self.installs(values):
            key = f"{kind.kind}/{kind.name}"
            name = "" if renamed else kind.named(release, namespace)
            if key in self.roles:
                out.roles.append((kind.kind, name, self.roles[key]))
            elif key in self.bindings:
                role_kind, _, role = self.bindings[key].partition("/")
                out.bindings.append((kind.kind, name))
                out.bound.add((role_kind, "" if renamed else named(role, release, namespace)))
        extra = value_at(values, (self.extra_objects,)) if self.extra_objects else MISSING
        for item in extra if isinstance(extra, list) else []:
            if isinstance(item, Mapping) and ("rbac.authorization.k8s.io", item.get("kind")) in RBAC_KINDS:
                name = str((item.get("metadata") or {}).get("name", ""))
                if isinstance(ref := item.get("roleRef"), Mapping):
                    out.bindings.append((str(item["kind"]), name))
                    out.bound.add((str(ref.get("kind", "")), str(ref.get("name", ""))))
                else:
                    out.roles.append((str(item["kind"]), name, tuple(item.get("rules") or ())))
        return out

    def renders(self, group: str, kind: str, values: Mapping[str, Any]) -> bool:
        """Whether the chart renders an object of `group`/`kind` with `values` (e.g. the DRA driver's
        controller Deployment, only with `resources.computeDomains.enabled`)."""
        return any(k.group == group and k.kind == kind for k in self.installs(values))

    def cluster_scoped(self) -> frozenset[tuple[str, str]]:
        """Cluster-scoped kinds: the built-in ones and those of the chart's cluster-scoped CRDs."""
        return CLUSTER_SCOPED_KINDS | {(k.group, k.kind) for k in self.objects if not k.namespaced}


def _from_json(doc: dict[str, Any]) -> ChartFacts:
    return ChartFacts(
        component=doc["component"],
        chart=doc["chart"],
        version=doc["version"],
        repository=doc["repository"],
        defaults=doc["defaults"],
        reads=frozenset(tuple(r) for r in doc["reads"]),
        toggles={name: {tuple(p): v for p, v in leaf_paths(patch)} for name, patch in doc["toggles"].items()},
        objects=tuple(
            ChartKind(
                o["group"],
                o["kind"],
                o["namespaced"],
                o.get("name", ""),
                tuple(o.get("onlyWith", ())),
                tuple(o.get("absentWith", ())),
            )
            for o in doc["objects"]
        ),
        extra_objects=doc.get("extraObjects", ""),
        roles={key: tuple(rules) for key, rules in doc["rbac"]["roles"].items()},
        bindings=dict(doc["rbac"]["bindings"]),
    )


@cache
def all_chart_facts() -> tuple[ChartFacts, ...]:
    """Every chart version the package has facts for."""
    folder = resources.files("gpuplatform.charts").joinpath("data")
    return tuple(
        _from_json(json.loads(entry.read_text()))
        for entry in sorted(folder.iterdir(), key=lambda e: e.name)
        if entry.name.endswith(".json")
    )


def _family(component: Component, release: Release) -> int:
    """DRA driver charts: calendar releases (25.x, `nvidia-dra-driver-gpu`) vs SemVer ones (0.x)."""
    return int(component == "dra-driver" and release.parts[0] >= 25)


Match = Literal["exact", "minor", "family"]


def chart_facts(component: Component, version: str) -> tuple[ChartFacts, Match]:
    """The facts to render `component` at `version` with, and how close they are: that very
    version, the newest of the same minor, or (a guess the policy reports) the newest of the family."""
    wanted = parse_release(version)
    family = [
        f
        for f in all_chart_facts()
        if f.component == component and _family(component, f.release) == _family(component, wanted)
    ]
    exact = [f for f in family if f.release == wanted]
    if exact:
        return exact[0], "exact"
    minor = [f for f in family if f.release.minor == wanted.minor]
    if minor:
        return max(minor, key=lambda f: f.release), "minor"
    candidates = family or [f for f in all_chart_facts() if f.component == component]
    return max(candidates, key=lambda f: f.release), "family"
