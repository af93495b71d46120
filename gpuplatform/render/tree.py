"""Wave states -> the file tree of one platform: which object goes in which folder, in which order."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.device_classes import render_device_classes
from gpuplatform.render.handoff import render_pool_handoffs
from gpuplatform.render.meta import Obj
from gpuplatform.render.nodes import render_nodes
from gpuplatform.render.tenants import render_tenants

__all__ = [
    "ENGINE_GROUPS",
    "KIND_RANK",
    "LAYERS",
    "Layer",
    "Tree",
    "file_name",
    "kustomization",
    "render_tree",
    "sort_objects",
]

Renderer = Callable[[Plan, WaveState], list[Obj]]


@dataclass(frozen=True)
class Layer:
    """A folder of every wave, applied in name order; `per_namespace` splits it by namespace."""

    name: str
    render: Renderer
    per_namespace: bool = False


LAYERS: tuple[Layer, ...] = (
    Layer("10-nodes", render_nodes),
    Layer("20-device-classes", render_device_classes),
    Layer("40-tenants", render_tenants, per_namespace=True),
)

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


def file_name(obj: Obj) -> str:
    """`<kind>_<name>.yaml`, or `<kind>_<namespace>_<name>.yaml` for namespaced objects."""
    meta = obj["metadata"]
    parts = (
        [obj["kind"], meta["namespace"], meta["name"]] if "namespace" in meta else [obj["kind"], meta["name"]]
    )
    return "_".join(parts).lower() + ".yaml"


def kustomization(resources: list[str]) -> Obj:
    """A kustomize `Kustomization` listing `resources` in the given (apply) order."""
    return {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": resources,
    }


@dataclass
class Tree:
    """The rendered files of one platform: relative path -> YAML documents or text."""

    platform: str
    files: dict[str, list[Obj] | str] = field(default_factory=dict)

    def add_folder(self, folder: str, objects: list[Obj], *, listed: bool = True) -> list[str]:
        """Write one file per object under `folder`, engine objects in engine subfolders.

        Returns the entries of `folder`'s kustomization (files, then engine-neutral subfolders).
        """
        entries: list[str] = []
        by_engine: dict[str, list[Obj]] = {}
        for obj in sort_objects(objects):
            engine = ENGINE_GROUPS.get(_group(obj))
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
            self.files[f"{folder}/kustomization.yaml"] = [kustomization(entries)]
        return entries


def _namespace_of(obj: Obj) -> str:
    meta = obj["metadata"]
    return str(meta["name"] if obj["kind"] == "Namespace" else meta.get("namespace", "cluster"))


def render_wave(tree: Tree, plan: Plan, state: WaveState, layers: tuple[Layer, ...]) -> None:
    """Add `waves/<NN>-<wave>/` and `handoff/<NN>-<wave>/` to `tree`."""
    root = f"waves/{state.dir_name}"
    layer_dirs: list[str] = []
    for layer in layers:
        objects = layer.render(plan, state)
        if not objects:
            continue
        folder = f"{root}/{layer.name}"
        if layer.per_namespace:
            by_ns: dict[str, list[Obj]] = {}
            for obj in objects:
                by_ns.setdefault(_namespace_of(obj), []).append(obj)
            for ns in sorted(by_ns):
                tree.add_folder(f"{folder}/{ns}", by_ns[ns])
            tree.files[f"{folder}/kustomization.yaml"] = [kustomization(sorted(by_ns))]
        else:
            tree.add_folder(folder, objects)
        layer_dirs.append(layer.name)
    tree.files[f"{root}/kustomization.yaml"] = [kustomization(layer_dirs)]
    handoffs = render_pool_handoffs(plan, state)
    if handoffs:
        tree.add_folder(f"handoff/{state.dir_name}", handoffs, listed=False)


def render_tree(plan: Plan, layers: tuple[Layer, ...] = LAYERS) -> Tree:
    """Every wave of the plan, as files."""
    tree = Tree(plan.platform.name)
    for state in plan.waves:
        render_wave(tree, plan, state, layers)
    return tree
