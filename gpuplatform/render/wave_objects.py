"""One wave's objects as a flat list, for consumers that apply them without our file tree (cdk8s)."""

from __future__ import annotations

from gpuplatform.plan.waves import Plan
from gpuplatform.render.meta import Obj
from gpuplatform.render.tree import ENGINE_GROUPS, render_tree

__all__ = ["wave_objects"]


def wave_objects(plan: Plan, wave: str, *, engine: str | None = None) -> list[Obj]:
    """The objects of wave `wave` in apply order (folder order, then file order).

    Engine-specific objects are included only for `engine` (`argocd` or `flux`); the
    kustomization files of the tree are not objects and are left out.
    """
    root = f"waves/{plan.wave(wave).dir_name}/"
    engines = set(ENGINE_GROUPS.values())
    objects: list[Obj] = []
    for path, content in render_tree(plan).files.items():
        if not path.startswith(root) or not isinstance(content, list) or path.endswith("/kustomization.yaml"):
            continue
        folders = set(path[len(root) :].split("/")[:-1])
        if folders & engines and engine not in folders:
            continue
        objects += content
    return objects
