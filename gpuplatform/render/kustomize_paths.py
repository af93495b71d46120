"""What a folder of a rendered tree builds: the files its `kustomization.yaml` lists, followed into
the folders it names (`../../../nodes/<pool>/<state>` included), as kustomize resolves them."""

from __future__ import annotations

from collections.abc import Mapping

from gpuplatform.render.meta import Obj

__all__ = ["built_files", "built_objects", "join_path"]

Files = Mapping[str, "list[Obj] | str"]


def join_path(folder: str, relative: str) -> str:
    """`relative` (with `..` parts) resolved against `folder`, as a path of the tree."""
    parts = folder.split("/")
    for part in relative.split("/"):
        if part == "..":
            parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    return "/".join(parts)


def built_files(files: Files, folder: str) -> list[str]:
    """The files `folder`'s kustomization builds, recursively, in its listed order."""
    entry = files.get(f"{folder}/kustomization.yaml")
    if not isinstance(entry, list):
        return []
    out: list[str] = []
    for resource in entry[0].get("resources", []):
        path = join_path(folder, str(resource))
        if path.endswith(".yaml"):
            out.append(path)
        else:
            out += built_files(files, path)
    return out


def built_objects(files: Files, folder: str) -> list[Obj]:
    """The objects `folder`'s kustomization builds."""
    objects: list[Obj] = []
    for path in built_files(files, folder):
        content = files.get(path)
        if isinstance(content, list):
            objects += content
    return objects
