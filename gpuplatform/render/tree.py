"""Wave states -> the file tree of one platform: which object goes in which folder, in which order."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from gpuplatform.kueue.render import render_kueue, render_kueue_handoffs
from gpuplatform.labels import GATE_PHASE_LABEL, TENANT_NAMESPACE_LABEL
from gpuplatform.plan.sync_order import SWITCH_LAYER, unit_of_folder
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.admission import render_policy
from gpuplatform.render.alerts import render_alerts
from gpuplatform.render.allocator_switch import render_switch_jobs, switch_folder, switch_identity
from gpuplatform.render.argocd_settings import ARGOCD_SETTINGS, argocd_cm_patch, argocd_settings_files
from gpuplatform.render.delivery import (
    APPS_FOLDER,
    ArgoInstalls,
    argocd_installs,
    is_remote,
    render_argocd_entry,
)
from gpuplatform.render.device_classes import render_device_classes
from gpuplatform.render.flux_entry import render_flux_entry
from gpuplatform.render.gate_jobs import gate_identity, render_gate_jobs
from gpuplatform.render.handoff import render_pool_handoffs
from gpuplatform.render.hook_cleanup import cleanup_identity, cleanup_job, cleanup_namespace_access
from gpuplatform.render.kustomize_paths import built_files, join_path
from gpuplatform.render.meta import Obj, file_name, for_engines, for_every_wave
from gpuplatform.render.nim import render_nim_handoffs, render_nim_owned
from gpuplatform.render.nodes import NODES_ROOT, node_folders
from gpuplatform.render.operator_handoff import operator_handoff, operator_handoff_path, operator_handoff_text
from gpuplatform.render.operators import argocd_wrappers, render_operators
from gpuplatform.render.sync_identity import render_sync_identity
from gpuplatform.render.tenant_delivery import render_tenant_delivery
from gpuplatform.render.tenants import render_tenants
from gpuplatform.render.workload_handoff import render_workload_handoffs, render_workload_templates

__all__ = [
    "ENGINE_GROUPS",
    "KIND_RANK",
    "LAYERS",
    "Layer",
    "SharedLayer",
    "Tree",
    "file_name",
    "kustomization",
    "render_tree",
    "shared_files",
    "sort_objects",
    "tree_collisions",
]

Renderer = Callable[[Plan, WaveState], list[Obj]]


def render_tenant_layer(plan: Plan, state: WaveState) -> list[Obj]:
    """Tenant namespaces and GitOps identities, the NIM services' and converted workloads' claim
    templates (tool-owned), and Kueue's flavors and queues."""
    return (
        render_tenants(plan, state)
        + render_kueue(plan, state)
        + render_tenant_delivery(plan, state)
        + render_nim_owned(plan, state)
        + render_workload_templates(plan, state)
    )


def _namespace_of(obj: Obj) -> str:
    meta = obj["metadata"]
    if TENANT_NAMESPACE_LABEL in meta.get("labels", {}):
        return str(meta["labels"][TENANT_NAMESPACE_LABEL])
    return str(meta["name"] if obj["kind"] == "Namespace" else meta.get("namespace", "cluster"))


def _gate_phase(obj: Obj) -> str:
    """Gate Jobs by phase; alerts go with the post-transition gates."""
    return str(obj["metadata"]["labels"].get(GATE_PHASE_LABEL, "post"))


def render_gates_layer(plan: Plan, state: WaveState) -> list[Obj]:
    """The wave's gate Jobs, the hook cleanup's access to them (Argo CD) and, when monitoring is on,
    its alerts."""
    return render_gate_jobs(plan, state) + cleanup_namespace_access(plan, state) + render_alerts(plan, state)


OPERATORS_LAYER = "00-operators"


@dataclass(frozen=True)
class Layer:
    """A folder of every wave, applied in name order; `split` names the subfolder of each object."""

    name: str
    render: Renderer
    split: Callable[[Obj], str] | None = None
    subfolders: tuple[str, ...] = ()
    """Subfolders that exist even when empty (entry points name them)."""


@dataclass(frozen=True)
class SharedLayer:
    """A folder of every wave whose objects live once under `root`, in the folders `render` names:
    each wave's folder only lists the ones it applies, so waves that apply the same objects share
    their files and a wave's change is the line naming another folder."""

    name: str
    render: Callable[[Plan, WaveState], dict[str, list[Obj]]]
    root: str
    split: None = None


LAYERS: tuple[Layer | SharedLayer, ...] = (
    Layer(OPERATORS_LAYER, render_operators),
    SharedLayer("10-nodes", node_folders, NODES_ROOT),
    Layer(SWITCH_LAYER, render_switch_jobs, split=switch_folder, subfolders=("enable", "release")),
    Layer("20-device-classes", render_device_classes),
    Layer("30-policy", render_policy),
    Layer("40-tenants", render_tenant_layer, split=_namespace_of),
    Layer("50-gates", render_gates_layer, split=_gate_phase, subfolders=("pre", "post")),
)
#: The folders beside `waves/` that hold a `SharedLayer`'s objects.
SHARED_ROOTS: tuple[str, ...] = tuple(layer.root for layer in LAYERS if isinstance(layer, SharedLayer))
ARGO_SYNC_WAVE = "argocd.argoproj.io/sync-wave"

#: Apply order inside a folder (lower first); kinds not listed go last, by name.
KIND_RANK: dict[str, int] = {
    "CustomResourceDefinition": 10,
    "Namespace": 20,
    "ResourceQuota": 30,
    "LimitRange": 31,
    "ServiceAccount": 40,
    "ClusterRole": 50,
    "ClusterRoleBinding": 51,
    "Role": 52,
    "RoleBinding": 53,
    "ConfigMap": 60,
    "Secret": 61,
    "Node": 70,
    "DeviceClass": 80,
    "ValidatingAdmissionPolicy": 90,
    "ValidatingAdmissionPolicyBinding": 91,
    "HelmRepository": 100,
    "OCIRepository": 101,
    "GitRepository": 102,
    "HelmRelease": 110,
    "AppProject": 120,
    "Application": 121,
    "ApplicationSet": 122,
    "ResourceClaimTemplate": 130,
    "ResourceClaim": 131,
    "NIMService": 140,
    "Job": 150,
    "PrometheusRule": 160,
    "Kustomization": 170,
}

#: API groups whose objects only one engine may apply: they live in that engine's subfolder.
ENGINE_GROUPS: dict[str, str] = {
    "helm.toolkit.fluxcd.io": "flux",
    "source.toolkit.fluxcd.io": "flux",
    "kustomize.toolkit.fluxcd.io": "flux",
    "argoproj.io": "argocd",
}


def _group(obj: Obj) -> str:
    api: str = obj["apiVersion"]
    return api.split("/", 1)[0] if "/" in api else ""


def sort_key(obj: Obj) -> tuple[int, str, str, str]:
    """(kind rank, kind, namespace, name)."""
    meta = obj["metadata"]
    return (KIND_RANK.get(obj["kind"], 999), obj["kind"], meta.get("namespace", ""), meta["name"])


def sort_objects(objects: list[Obj]) -> list[Obj]:
    """Objects in apply order."""
    return sorted(objects, key=sort_key)


def kustomization(resources: list[str]) -> Obj:
    """A kustomize `Kustomization` listing `resources` in the given (apply) order."""
    return {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": resources,
    }


def _describe(content: list[Obj] | str) -> str:
    if isinstance(content, str):
        return "a text file"
    return " + ".join(_identity_text(o) for o in content) or "an empty file"


def _identity(obj: Obj) -> tuple[str, str, str, str]:
    meta = obj.get("metadata") or {}
    return (_group(obj), str(obj.get("kind")), str(meta.get("namespace", "")), str(meta.get("name")))


def _identity_text(obj: Obj) -> str:
    _, kind, namespace, name = _identity(obj)
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


class _Files(dict[str, list[Obj] | str]):
    """The files of a tree; writing a path twice keeps the first and records the collision."""

    def __init__(self) -> None:
        super().__init__()
        self.collisions: list[str] = []

    def __setitem__(self, path: str, content: list[Obj] | str) -> None:
        if path in self:
            self.collisions.append(f"renders {path} twice: {_describe(self[path])} and {_describe(content)}")
            return
        super().__setitem__(path, content)


def _applied_sets(tree: Tree) -> dict[str, list[str]]:
    """Paths whose objects one cluster holds together: each wave with the gate identity it runs as
    (`delivery/gates`), each entry point of `delivery/` and each hand-off folder on its own (entry
    points are alternatives: one engine, one Application or ApplicationSet)."""
    sets: dict[str, list[str]] = {}
    for path in tree.files:
        parts = path.split("/")
        if parts[0] in ("waves", "handoff", "delivery") and len(parts) > 2:
            sets.setdefault(f"{parts[0]}/{parts[1]}", []).append(path)
    gates = sets.get("delivery/gates", [])
    for key in sets:
        if key.startswith("waves/"):
            sets[key] += gates + [
                shared
                for path in sets[key]
                if path.endswith("/kustomization.yaml")
                for shared in shared_files(tree.files, path)
            ]
    return sets


def shared_files(files: Mapping[str, list[Obj] | str], kustomization: str) -> list[str]:
    """The files of the shared folders (a `SharedLayer`'s, `nodes/...`) that the kustomization at
    path `kustomization` names."""
    if not kustomization.endswith("/kustomization.yaml"):
        return []
    folder = kustomization[: -len("/kustomization.yaml")]
    content = files.get(kustomization)
    out: list[str] = []
    for resource in content[0].get("resources", []) if isinstance(content, list) else []:
        target = join_path(folder, str(resource))
        if target.startswith(tuple(f"{root}/" for root in SHARED_ROOTS)):
            out += built_files(files, target)
    return out


def tree_collisions(tree: Tree) -> list[str]:
    """Every path rendered twice, and every identity (group, kind, namespace, name) that a wave (with
    its gate identity), an entry point or a hand-off folder holds twice."""
    found = list(getattr(tree.files, "collisions", []))
    for label, paths in sorted(_applied_sets(tree).items()):
        seen: dict[tuple[str, str, str, str], str] = {}
        for path in sorted(paths):
            content = tree.files[path]
            if isinstance(content, str):
                continue
            for obj in content:
                if _group(obj) == "kustomize.config.k8s.io":
                    continue
                key = _identity(obj)
                first = seen.setdefault(key, path)
                if first != path:
                    found.append(f"{label} applies {_identity_text(obj)} twice: {first} and {path}")
    return found


@dataclass
class Tree:
    """The rendered files of one platform: relative path -> YAML documents or text.

    A path is written once: a second write is kept out and recorded (see `tree_collisions`).
    """

    platform: str
    files: dict[str, list[Obj] | str] = field(default_factory=_Files)

    def add_folder(
        self,
        folder: str,
        objects: list[Obj],
        *,
        listed: bool = True,
        engines: bool = True,
        extra: tuple[str, ...] = (),
    ) -> list[str]:
        """Write one file per object under `folder`, engine objects in engine subfolders (`engines`).

        Returns the entries of `folder`'s kustomization (its files, then `extra` entries).
        """
        entries: list[str] = []
        by_engine: dict[str, list[Obj]] = {}
        for obj in sort_objects(objects):
            engine = ENGINE_GROUPS.get(_group(obj)) if engines else None
            if engine is not None:
                by_engine.setdefault(engine, []).append(obj)
                continue
            name = file_name(obj)
            self.files[f"{folder}/{name}"] = [obj]
            entries.append(name)
        for engine, engine_objects in sorted(by_engine.items()):
            names = [file_name(o) for o in engine_objects]
            for name, obj in zip(names, engine_objects, strict=True):
                self.files[f"{folder}/{engine}/{name}"] = [obj]
            self.files[f"{folder}/{engine}/kustomization.yaml"] = [kustomization(names)]
        if listed:
            self.files[f"{folder}/kustomization.yaml"] = [kustomization(entries + list(extra))]
        return entries

    def folders(self, prefix: str) -> list[str]:
        """Folders directly or deeper under `prefix` that hold a kustomization, relative to it."""
        return _folders(self.files, prefix)


def _folders(paths: Iterable[str], prefix: str) -> list[str]:
    return sorted(
        p[len(prefix) : -len("/kustomization.yaml")]
        for p in paths
        if p.startswith(prefix) and p.endswith("/kustomization.yaml")
    )


def _sync_wave(objects: list[Obj], layer: Layer | SharedLayer) -> None:
    """Order the layers for Argo CD: each object gets the sync-wave of its unit in `SYNC_UNITS`.

    PreSync and PostSync hooks run in their phase and need none; Sync hooks (the allocator switch)
    are ordered among the waves like resources.
    """
    whole = str(unit_of_folder(layer.name).argo_wave) if layer.split is None else ""
    for obj in objects:
        if ENGINE_GROUPS.get(_group(obj)) == "flux":
            continue
        annotations = obj["metadata"].setdefault("annotations", {})
        if annotations.get("argocd.argoproj.io/hook", "Sync") == "Sync":
            split = layer.split
            wave = str(unit_of_folder(f"{layer.name}/{split(obj)}").argo_wave) if split else whole
            annotations[ARGO_SYNC_WAVE] = wave
            obj["metadata"]["annotations"] = dict(sorted(annotations.items()))


def _add_shared(tree: Tree, plan: Plan, state: WaveState, layer: SharedLayer, folder: str) -> None:
    """`folder`'s kustomization naming the folders of `layer.root` the wave applies, each written by
    the first wave that applies it (the same name holds the same objects: a second, different
    content is a collision, `tree_collisions`)."""
    engines = plan.platform.delivery.engines
    up = "/".join([".."] * len(folder.split("/")))
    entries = []
    for sub, objects in layer.render(plan, state).items():
        shared = f"{layer.root}/{sub}"
        objects = for_engines(objects, engines)
        if "argocd" in engines:
            _sync_wave(objects, layer)
        if f"{shared}/kustomization.yaml" not in tree.files or any(
            tree.files.get(f"{shared}/{file_name(o)}") != [o] for o in objects
        ):
            tree.add_folder(shared, objects)
        entries.append(f"{up}/{shared}")
    tree.files[f"{folder}/kustomization.yaml"] = [kustomization(entries)]


def render_wave(tree: Tree, plan: Plan, state: WaveState, layers: tuple[Layer | SharedLayer, ...]) -> None:
    """Add `waves/<NN>-<wave>/` (every layer folder, even empty) and `handoff/<NN>-<wave>/` to `tree`."""
    root = f"waves/{state.dir_name}"
    engines = plan.platform.delivery.engines
    argo = "argocd" in engines
    start = len(tree.files)
    for layer in layers:
        if isinstance(layer, SharedLayer):
            _add_shared(tree, plan, state, layer, f"{root}/{layer.name}")
            continue
        objects = for_engines(layer.render(plan, state), engines)
        if argo:
            _sync_wave(objects, layer)
        folder = f"{root}/{layer.name}"
        if layer.split is None:
            tree.add_folder(folder, objects)
            continue
        groups: dict[str, list[Obj]] = {sub: [] for sub in layer.subfolders}
        for obj in objects:
            groups.setdefault(layer.split(obj), []).append(obj)
        for sub in sorted(groups):
            tree.add_folder(f"{folder}/{sub}", groups[sub])
        tree.files[f"{folder}/kustomization.yaml"] = [kustomization(sorted(groups))]
    for folder, wrapper in argocd_wrappers(plan, state).items():
        tree.files[f"{folder}/kustomization.yaml"] = [wrapper]
    if "flux" in plan.platform.delivery.engines and any(layer.name == OPERATORS_LAYER for layer in layers):
        # Flux's releases folder exists in every wave, empty where the wave installs no release: its
        # Kustomization stays in the chain and prunes a removed release in the chain's order (after
        # the pre gates). Dropped from the entry, the Kustomization would be deleted and its
        # finalizer (spec.prune) would uninstall the release at once, before any gate ran
        # (kustomize-controller v1.9.4 `finalize`, `finalizerShouldDeleteResources`).
        tree.files.setdefault(f"{root}/{OPERATORS_LAYER}/flux/kustomization.yaml", [kustomization([])])
    tree.files[f"{root}/kustomization.yaml"] = [kustomization([layer.name for layer in layers])]
    if argo:
        added = list(tree.files)[start:]
        engine_dirs = [f"../{f}" for f in _folders(added, f"{root}/") if f.endswith("/argocd")]
        entries = [f"../{layer.name}" for layer in layers]
        if is_remote(plan):
            tree.files[f"{root}/{APPS_FOLDER}/kustomization.yaml"] = [kustomization(engine_dirs)]
        else:
            entries += engine_dirs
        entries += tree.add_folder(f"{root}/argocd", [cleanup_job(plan, state)], listed=False)
        tree.files[f"{root}/argocd/kustomization.yaml"] = [kustomization(entries)]
    handoffs = for_engines(
        render_pool_handoffs(plan, state)
        + render_nim_handoffs(plan, state)
        + render_workload_handoffs(plan, state)
        + render_kueue_handoffs(plan, state),
        engines,
    )
    if handoffs:
        tree.add_folder(f"handoff/{state.dir_name}", handoffs, listed=False)
    values = operator_handoff(plan) if state is plan.waves[0] else None
    path = operator_handoff_path(plan)
    if values is not None and path is not None:
        tree.files[path] = operator_handoff_text(values)


def render_delivery(tree: Tree, plan: Plan, waves: ArgoInstalls | None = None) -> None:
    """`delivery/`: the gate identity and each engine's entry point for the active wave.

    Argo CD applies the gate identity through an entry Application (on the platform's cluster,
    even when Argo CD runs elsewhere); Flux, which runs in the cluster, includes the folder.
    `waves`: `wave_installs` of the tree, when it was read already."""
    p = plan.platform
    tree.add_folder(
        "delivery/gates",
        for_every_wave(
            for_engines(
                gate_identity(plan, p.active_wave)
                + switch_identity(plan, p.active_wave)
                + cleanup_identity(plan, p.active_wave),
                p.delivery.engines,
            )
        ),
    )
    if "argocd" in p.delivery.engines:
        installs = argocd_installs(plan, tree.files, waves)
        entry = for_every_wave(render_argocd_entry(plan, installs))
        tree.add_folder("delivery/argocd", entry, engines=False)
        if settings := argocd_cm_patch(plan):
            tree.add_folder(ARGOCD_SETTINGS, for_every_wave(settings), listed=False, engines=False)
        for path, text in argocd_settings_files(plan).items():
            tree.files[path] = text
        for folder, objects in render_sync_identity(plan, installs).items():
            tree.add_folder(folder, for_every_wave(for_engines(objects, p.delivery.engines)), engines=False)
    if "flux" in p.delivery.engines:
        root = f"waves/{plan.active.dir_name}/"
        folders = [f for f in tree.folders(root) if f and f.split("/")[-1] not in ("argocd", APPS_FOLDER)]
        layer_folders = [
            f
            for f in folders
            if ("/" not in f and f != SWITCH_LAYER) or f.endswith("/flux") or f.startswith(f"{SWITCH_LAYER}/")
        ]
        entry = render_flux_entry(plan, layer_folders)
        tree.add_folder("delivery/flux", for_every_wave(entry), engines=False, extra=("../gates",))


def render_tree(plan: Plan, layers: tuple[Layer | SharedLayer, ...] = LAYERS) -> Tree:
    """Every wave of the plan and the entry points, as files (the runbooks, which read the rendered
    files, are added by `commands.synth.render_files`)."""
    tree = Tree(plan.platform.name)
    for state in plan.waves:
        render_wave(tree, plan, state, layers)
    render_delivery(tree, plan)
    return tree
