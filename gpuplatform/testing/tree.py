"""A platform's rendered tree as objects, and the assertion that every object in it is valid."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from gpuplatform.model.platform import Platform
from gpuplatform.validate import SchemaMissing, validate_object
from gpuplatform.versions import parse_release

__all__ = ["Tree", "assert_valid_tree", "tree_objects"]

#: A rendered tree: a Platform (rendered in memory, as `platform.render()`), a folder `synth`
#: wrote (`dist/<platform>`), or its files (relative path -> bytes).
Tree = Platform | Path | Mapping[str, bytes]


def _files(tree: Tree) -> Mapping[str, bytes]:
    if isinstance(tree, Platform):
        return tree.render().files
    if isinstance(tree, Path):
        return {
            p.relative_to(tree).as_posix(): p.read_bytes() for p in sorted(tree.rglob("*")) if p.is_file()
        }
    return tree


def tree_objects(tree: Tree) -> dict[str, list[dict[str, Any]]]:
    """Every YAML file of `tree` as its objects, by relative path (`waves/01-pilot/10-nodes/...`);
    runbooks, the overview and the lock file are not objects and are left out."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return {
        path: [obj for obj in yaml.load_all(data, Loader=loader) if obj is not None]
        for path, data in _files(tree).items()
        if path.endswith((".yaml", ".yml"))
    }


def assert_valid_tree(tree: Tree, kubernetes: str | None = None) -> None:
    """Every object of `tree` is valid for Kubernetes `kubernetes` (`1.36`; a Platform's own
    release when not given): built-in kinds by kubernetes-validate's strict schemas of that
    release, the CRDs the tree uses (Argo CD, Flux, Kueue, Karpenter, Prometheus, kustomize, the
    hand-offs) by the project's schemas. AssertionError naming every invalid object and field."""
    if kubernetes is None:
        if not isinstance(tree, Platform):
            raise TypeError("assert_valid_tree: pass kubernetes= (e.g. '1.36') for a folder or files")
        kubernetes = tree.kubernetes.version
    minor = parse_release(kubernetes).minor
    problems: list[str] = []
    for path, objects in tree_objects(tree).items():
        for obj in objects:
            where = f"{path}: {obj.get('kind')}/{(obj.get('metadata') or {}).get('name')}"
            try:
                problems += [f"{where}: {error}" for error in validate_object(obj, minor)]
            except SchemaMissing as exc:
                problems.append(f"{where}: {exc}")
            except KeyError as exc:
                problems.append(f"{where}: no {exc.args[0]}")
    if problems:
        raise AssertionError("invalid objects in the tree:\n" + "\n".join(problems))
