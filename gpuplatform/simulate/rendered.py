"""What each engine would apply for one wave, read from the rendered tree (not from the plan).

Flux: the entry point's Kustomizations, ordered by `dependsOn`, each with the objects its
`spec.path` builds (kustomize-controller v1.9.4 `checkDependencies`: a dependant waits until its
dependency is Ready at the same source revision). Argo CD: the parent Application's path, every
object grouped by hook phase and sync-wave (gitops-engine v0.7.3 `pkg/sync/sync_tasks.go`: phase,
wave, kind, name), child Applications resolved to the chart and values they install.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from gpuplatform.charts.facts import all_chart_facts
from gpuplatform.plan.waves import Plan
from gpuplatform.render.delivery import ArgoInstalls, wave_installs
from gpuplatform.render.kustomize_paths import built_objects
from gpuplatform.render.meta import Obj
from gpuplatform.render.tree import Tree, render_delivery
from gpuplatform.simulate.helm_rollout import duration_minutes

__all__ = [
    "DRA_CHARTS",
    "OPERATOR_CHARTS",
    "EngineWave",
    "EntryTrees",
    "ReleaseSpec",
    "Unit",
    "engine_wave",
    "entry_tree",
    "flux_chart",
    "rendered_releases",
]

#: Chart names of the two components, every version (the DRA driver's was renamed in 0.4.0).
DRA_CHARTS = frozenset(f.chart for f in all_chart_facts() if f.component == "dra-driver")
OPERATOR_CHARTS = frozenset(f.chart for f in all_chart_facts() if f.component == "gpu-operator")
ARGO_HOOK = "argocd.argoproj.io/hook"
ARGO_WAVE = "argocd.argoproj.io/sync-wave"
ARGO_OPTIONS = "argocd.argoproj.io/sync-options"
_PHASES = {"PreSync": 0, "Sync": 1, "PostSync": 2}
#: gitops-engine `kindOrder` (pkg/sync/sync_tasks.go): kinds applied first within one wave.
_KIND_ORDER = (
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "ServiceAccount",
    "Secret",
    "ConfigMap",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
)


@dataclass
class ReleaseSpec:
    """A Helm release an engine installs: chart, version, values and post-render patches."""

    name: str
    chart: str
    version: str
    values: dict[str, Any]
    patches: list[dict[str, Any]]
    finalizer: bool = True
    """Argo CD child Application with `resources-finalizer.argocd.argoproj.io` (Flux: always uninstalls)."""


@dataclass
class Unit:
    """One thing the engine applies and waits for: a Flux Kustomization or an Argo CD (phase, wave)."""

    name: str
    objects: list[Obj]
    hook: str = ""
    """Argo CD hook phase of the objects (`PreSync`, `Sync`, `PostSync`), empty for plain resources."""
    wave: int = 0
    prune: bool = True
    wait: bool = True
    folder: str = ""
    """Flux: the wave folder the Kustomization builds."""
    retry_after: float = 0.0
    """Seconds before the engine applies a refused unit again: Flux, the Kustomization's
    `retryInterval`, else its `interval` (kustomize-controller v1.9.4 api/v1 `GetRetryInterval`);
    Argo CD, the first backoff of the Application's `syncPolicy.retry`, 5 s unless set (argo-cd
    v3.5.1 pkg/apis/application/v1alpha1 `NextRetryAt`, application_defaults.go)."""


@dataclass
class EngineWave:
    """The units of one wave for one engine, in the order the engine applies them."""

    engine: str
    wave: str
    units: list[Unit]
    retry_limit: int
    """Argo CD: retries of a failed sync (-1: unlimited). Flux: -1 (it re-reconciles every interval)."""
    self_heal: bool
    """Argo CD `automated.selfHeal`: a drifted object is synced back (Flux: always, every interval)."""
    prune_last: bool
    releases: dict[str, ReleaseSpec] = field(default_factory=dict)
    entry: list[Obj] = field(default_factory=list)
    by_hand: list[Obj] = field(default_factory=list)
    """Argo CD, remote cluster: the child Applications of `<platform>-apps`, synced by hand."""
    prune: bool = True
    """Argo CD `automated.prune`: false leaves objects no longer in Git in place (Flux: each
    Kustomization's own `prune`)."""
    delivered: list[Obj] = field(default_factory=list)
    """What the entry applies beside the waves, the same in every wave: the gate programs, the
    gate, switch and sync identities (`delivery/gates/`, `delivery/argocd-sync/`)."""


class EntryTrees:
    """`entry_tree` of one tree for each wave, each built once: what every wave shares (the files
    outside `delivery/`, what they install, `delivery/` as synth renders it for the tree's own
    `activeWave`) is read once, not once per wave."""

    def __init__(self, tree: Tree, plan: Plan) -> None:
        self.tree, self.plan = tree, plan
        self._built: dict[str, Tree] = {}
        self._shared: tuple[dict[str, Any], ArgoInstalls | None, dict[str, Any]] | None = None

    def __getitem__(self, wave: str) -> Tree:
        if wave not in self._built:
            self._built[wave] = self._build(wave)
        return self._built[wave]

    def _build(self, wave: str) -> Tree:
        tree, plan = self.tree, self.plan
        if wave == plan.platform.active_wave:
            return tree
        if self._shared is None:
            waves = {k: v for k, v in tree.files.items() if not k.startswith("delivery/")}
            installs = wave_installs(plan, waves) if "argocd" in plan.platform.delivery.engines else None
            self._shared = waves, installs, self._delivery(waves, installs, plan.platform.active_wave)
        waves, installs, now = self._shared
        then = self._delivery(waves, installs, wave)
        kept = {
            k: v for k, v in tree.files.items() if k.startswith("delivery/") and then.get(k) == now.get(k)
        }
        moved = {k: v for k, v in then.items() if v != now.get(k)}
        return Tree(tree.platform, waves | kept | moved)

    def _delivery(self, waves: dict[str, Any], installs: ArgoInstalls | None, wave: str) -> dict[str, Any]:
        """The `delivery/` files synth renders beside the files `waves` with `activeWave: wave`."""
        scratch = Tree(self.tree.platform, dict(waves))
        plan = Plan(self.plan.platform.model_copy(update={"active_wave": wave}), self.plan.waves)
        render_delivery(scratch, plan, installs)
        return {k: v for k, v in scratch.files.items() if k.startswith("delivery/")}


def entry_tree(tree: Tree, plan: Plan, wave: str) -> Tree:
    """The tree as it is once its `activeWave` is `wave`: the `delivery/` files that line names
    (the entry's paths) as synth renders them for `wave`, every other file as the tree holds it,
    hand edits included."""
    return EntryTrees(tree, plan)[wave]


def _flux(scratch: Tree, plan: Plan, wave: str) -> EngineWave:
    entry = built_objects(scratch.files, "delivery/flux")
    kustomizations = {o["metadata"]["name"]: o for o in entry if o["kind"] == "Kustomization"}
    ordered: list[str] = []
    pending = sorted(kustomizations)
    while pending:
        ready = [
            n
            for n in pending
            if all(d["name"] in ordered for d in kustomizations[n]["spec"].get("dependsOn", []))
        ]
        if not ready:
            ordered += pending
            break
        ordered.append(ready[0])
        pending.remove(ready[0])
    units = []
    for name in ordered:
        spec = kustomizations[name]["spec"]
        folder = _in_tree(plan, str(spec["path"]))
        units.append(
            Unit(
                name,
                built_objects(scratch.files, folder),
                prune=bool(spec.get("prune")),
                wait=bool(spec.get("wait")),
                folder=folder.split("/", 2)[-1],
                retry_after=60 * duration_minutes(str(spec.get("retryInterval") or spec["interval"])),
            )
        )
    releases = {
        o["metadata"]["name"]: _flux_release(o, u.objects)
        for u in units
        for o in u.objects
        if o["kind"] == "HelmRelease"
    }
    # every Flux API group is `<controller>.toolkit.fluxcd.io`: the rest is what the entry delivers
    delivered = [o for o in entry if ".toolkit.fluxcd.io/" not in o["apiVersion"]]
    return EngineWave("flux", wave, units, -1, True, False, releases, entry, delivered=delivered)


def _in_tree(plan: Plan, path: str) -> str:
    """A repository path of the platform's tree, relative to the tree."""
    return path.removeprefix("./").removeprefix(f"{plan.platform.delivery.path}/{plan.platform.name}/")


def _argo_release(tree: Tree, plan: Plan, app: Obj) -> ReleaseSpec:
    source = app["spec"]["source"]
    finalizer = "resources-finalizer.argocd.argoproj.io" in app["metadata"].get("finalizers", [])
    if "chart" in source:
        values = (source.get("helm") or {}).get("valuesObject") or {}
        return ReleaseSpec(
            app["metadata"]["name"], source["chart"], str(source["targetRevision"]), values, [], finalizer
        )
    wrapper = tree.files.get(f"{_in_tree(plan, str(source['path']))}/kustomization.yaml")
    kustomization: dict[str, Any] = wrapper[0] if isinstance(wrapper, list) else {}
    chart = (kustomization.get("helmCharts") or [{}])[0]
    return ReleaseSpec(
        app["metadata"]["name"],
        str(chart.get("name", "")),
        str(chart.get("version", "")),
        chart.get("valuesInline") or {},
        list(kustomization.get("patches") or []),
        finalizer,
    )


def flux_chart(release: Obj, objects: Iterable[Obj]) -> tuple[str, str]:
    """(chart, version) of a HelmRelease: its `chart.spec`, or the OCIRepository (among `objects`)
    its `chartRef` names, whose URL ends in the chart and whose tag is the version."""
    spec = release["spec"]
    if "chartRef" in spec:
        name = spec["chartRef"]["name"]
        [repo] = [o for o in objects if o["kind"] == "OCIRepository" and o["metadata"]["name"] == name]
        return str(repo["spec"]["url"]).rsplit("/", 1)[1], str(repo["spec"]["ref"]["tag"])
    chart = spec["chart"]["spec"]
    return str(chart["chart"]), str(chart.get("version", ""))


def _flux_release(obj: Obj, objects: list[Obj]) -> ReleaseSpec:
    spec = obj["spec"]
    patches = [
        p for r in spec.get("postRenderers", []) for p in (r.get("kustomize") or {}).get("patches", [])
    ]
    chart, version = flux_chart(obj, objects)
    return ReleaseSpec(obj["metadata"]["name"], chart, version, spec.get("values") or {}, patches)


def _siblings(tree: Tree, path: str) -> list[Obj]:
    """The objects of the files in `path`'s folder (a HelmRelease's OCIRepository sits beside it)."""
    folder = path.rsplit("/", 1)[0]
    return [
        o for p, c in tree.files.items() if p.rsplit("/", 1)[0] == folder and isinstance(c, list) for o in c
    ]


def rendered_releases(tree: Tree, plan: Plan) -> Iterator[tuple[str, str, ReleaseSpec]]:
    """(wave folder name, file, release) of every Helm release the tree renders, for either engine."""
    for path, content in sorted(tree.files.items()):
        parts = path.split("/")
        if (
            len(parts) < 4
            or parts[0] != "waves"
            or parts[2] != "00-operators"
            or not isinstance(content, list)
        ):
            continue
        for obj in content:
            if obj.get("kind") == "HelmRelease":
                yield parts[1], path, _flux_release(obj, _siblings(tree, path))
            elif obj.get("kind") == "Application":
                yield parts[1], path, _argo_release(tree, plan, obj)


def _argo_key(obj: Obj) -> tuple[int, int]:
    annotations = obj["metadata"].get("annotations") or {}
    hook = annotations.get(ARGO_HOOK, "")
    phase = _PHASES.get(hook.split(",")[0], 1) if hook else 1
    return phase, int(annotations.get(ARGO_WAVE, "0"))


def _kind_rank(obj: Obj) -> int:
    kind = obj["kind"]
    return _KIND_ORDER.index(kind) if kind in _KIND_ORDER else len(_KIND_ORDER)


def _argocd(scratch: Tree, plan: Plan, wave: str) -> EngineWave:
    entry = built_objects(scratch.files, "delivery/argocd")
    apps = {_in_tree(plan, str(o["spec"]["source"]["path"])): o for o in entry if o["kind"] == "Application"}
    source, parent = next((p, o) for p, o in apps.items() if p.endswith("/argocd"))
    objects = built_objects(scratch.files, source)
    by_hand = [
        o for p, a in apps.items() if p.endswith("/argocd-apps") for o in built_objects(scratch.files, p)
    ]
    delivered = [
        o
        for p in apps
        if not p.endswith(("/argocd", "/argocd-apps"))
        for o in built_objects(scratch.files, p)
    ]
    buckets: dict[tuple[int, int], list[Obj]] = {}
    for obj in objects:
        buckets.setdefault(_argo_key(obj), []).append(obj)
    units = []
    names = {0: "PreSync", 1: "Sync", 2: "PostSync"}
    for phase, number in sorted(buckets):
        group = sorted(buckets[(phase, number)], key=lambda o: (_kind_rank(o), o["metadata"]["name"]))
        hook = names[phase] if phase != 1 else ""
        units.append(Unit(f"{names[phase]} wave {number}", group, hook=hook, wave=number))
    policy = parent["spec"].get("syncPolicy") or {}
    retry = policy.get("retry")
    limit = int(retry.get("limit", 0)) if isinstance(retry, dict) else 5
    backoff = (retry.get("backoff") or {}) if isinstance(retry, dict) else {}
    for unit in units:
        unit.retry_after = 60 * duration_minutes(str(backoff.get("duration") or _ARGO_RETRY_DURATION))
    releases = {
        o["metadata"]["name"]: _argo_release(scratch, plan, o)
        for o in objects + by_hand
        if o["kind"] == "Application"
    }
    options = policy.get("syncOptions") or []
    automated = policy.get("automated")
    return EngineWave(
        "argocd",
        wave,
        units,
        limit,
        bool((automated or {}).get("selfHeal")),
        "PruneLast=true" in options,
        releases,
        entry,
        by_hand,
        prune=bool(automated.get("prune")) if isinstance(automated, dict) else True,
        delivered=delivered,
    )


#: Argo CD's first retry backoff when the Application sets none (argo-cd v3.5.1
#: pkg/apis/application/v1alpha1/application_defaults.go `DefaultSyncRetryDuration`).
_ARGO_RETRY_DURATION = "5s"


def engine_wave(tree: Tree, plan: Plan, wave: str, engine: str, scratch: Tree | None = None) -> EngineWave:
    """What `engine` applies when `activeWave` is `wave` (`scratch`: `entry_tree` of it, if rendered).

    Argo CD's automated sync retries a failed sync 5 times when the Application sets no
    `syncPolicy.retry` (argo-cd v3.5.1 controller/appcontroller.go `autoSync`:
    `Retry: RetryStrategy{Limit: 5}`), with 5 s doubling backoff capped at 3 min.
    """
    scratch = scratch if scratch is not None else entry_tree(tree, plan, wave)
    return _flux(scratch, plan, wave) if engine == "flux" else _argocd(scratch, plan, wave)
