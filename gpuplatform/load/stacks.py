"""Stacks: Python files or YAML specs that declare platforms, plus the overlays merged onto them.

Python stacks are trusted code, run in-process like a setup.py: they expose `platform`,
`platforms` or `build()`, and may list `overlays` (paths relative to the stack file). While a
stack runs, what it prints goes to stderr (stdout carries `--format json`), and a stack that
changes the working directory is put back where it started.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gpuplatform.errors import InputError, Problem, format_loc
from gpuplatform.labels import BASE_ANNOTATION, OVERLAYS_ANNOTATION
from gpuplatform.load.documents import (
    OVERLAY_KIND,
    PLATFORM_KIND,
    check_envelope,
    duplicate_names,
    platform_document,
    platform_from_document,
    problems_from_validation,
)
from gpuplatform.load.merge import Origin, merge_spec, parse_loc
from gpuplatform.load.yaml_input import read_text, read_yaml
from gpuplatform.model.platform import Platform

__all__ = [
    "PYTHON_SOURCE",
    "LoadedPlatform",
    "discover_stacks",
    "load_stack",
    "load_stacks",
    "loaded_platform",
]

#: The source of a platform built in Python and given to a verb without its file.
PYTHON_SOURCE = "<python>"
_STACK_SUFFIXES = (".py", ".yaml", ".yml")


@dataclass(frozen=True)
class LoadedPlatform:
    """A validated platform and where it came from."""

    platform: Platform
    source: str
    overlays: tuple[str, ...]
    document: dict[str, Any]
    manifests: dict[str, str] = field(default_factory=dict)
    """Text of the original manifests the spec names (`workloads[].manifest`, `nimServices[].manifest`)."""
    origin: Origin | None = None
    """Which file (stack or overlay) wrote each part of `document`; None: all of it is `source`."""

    def locate(self, loc: str) -> tuple[str, str]:
        """The file that wrote the spec path `loc` (`spec.waves[3]`) and the path in that file."""
        if self.origin is None:
            return self.source, loc
        file, where = self.origin.locate(parse_loc(loc))
        return (self.source, loc) if file == self.source else (file, format_loc(where))


def _read_manifests(platform: Platform, source: Path) -> dict[str, str]:
    """Read each `workloads[].manifest` and `nimServices[].manifest`, inside the stack file's folder.

    The text is copied into `dist/`, so a manifest (after its links are resolved) must stay in the
    stack's folder: a spec cannot publish /etc/shadow or a neighbour's secrets.
    """
    texts: dict[str, str] = {}
    problems: list[Problem] = []
    named = [("workloads", i, w.manifest) for i, w in enumerate(platform.workloads)]
    named += [("nimServices", i, n.manifest) for i, n in enumerate(platform.nim_services)]
    folder = source.parent.resolve()
    for field_name, i, manifest in named:
        if manifest is None:
            continue
        loc = f"spec.{field_name}[{i}].manifest"
        path = source.parent / manifest
        if not path.resolve().is_relative_to(folder):
            problems.append(
                Problem(str(source), loc, "", f"{path} leads outside the stack's folder {folder}")
            )
            continue
        try:
            texts[manifest] = read_text(path)
        except InputError as exc:
            problems += [Problem(str(source), loc, "", f"{path}: {p.message}") for p in exc.problems]
    if problems:
        raise InputError(problems)
    return texts


def loaded_platform(platform: Platform, source: str | Path = PYTHON_SOURCE) -> LoadedPlatform:
    """A Platform built in Python as the loader gives it: its spec document, and the manifests its
    workloads and NIM services name read from the folder of `source` (the stack file that builds
    it, named in errors and in the lock file; by default the working directory)."""
    path = Path(source)
    return LoadedPlatform(
        platform, str(source), (), platform_document(platform), _read_manifests(platform, path)
    )


def discover_stacks(directory: Path) -> list[Path]:
    """Stack files directly in `directory`, in name order (`_private.py` files are helpers)."""
    if not directory.is_dir():
        raise InputError.single(str(directory), "", "no such stacks folder")
    found = sorted(
        p for p in directory.iterdir() if p.suffix in _STACK_SUFFIXES and not p.name.startswith(("_", "."))
    )
    if not found:
        raise InputError.single(
            str(directory), "", "no stack in this folder (*.py, *.yaml, *.yml): nothing to render"
        )
    return found


def _stack_error(path: Path, exc: BaseException) -> InputError:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename) == path.resolve()]
    line = f"line {frames[-1].lineno}" if frames else ""
    if (
        isinstance(exc, SyntaxError)
        and exc.lineno is not None
        and Path(exc.filename or "").resolve() == path.resolve()
    ):
        line = f"line {exc.lineno}"
    if isinstance(exc, ValidationError) and exc.title == Platform.__name__:
        # located as in a YAML spec (spec.nodePools[0].migratesIn); the line says which Platform
        where = f"the Platform built at {line}" if line else ""
        return InputError([replace(p, hint=where) for p in problems_from_validation(exc, Origin(str(path)))])
    if isinstance(exc, ValidationError):
        problems = []
        for e in exc.errors():
            field = ".".join(str(p) for p in e["loc"])
            message = e["msg"].removeprefix("Value error, ")
            problems.append(
                Problem(file=str(path), loc=line, code="", message=f"{exc.title}.{field}: {message}")
            )
        return InputError(problems)
    return InputError.single(str(path), line, f"the stack raised {type(exc).__name__}: {exc}")


def _run_python_stack(path: Path) -> tuple[list[Platform], list[str]]:
    name = f"gpuplatform_stack_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise InputError.single(str(path), "", "cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    cwd = os.getcwd()
    try:
        with contextlib.redirect_stdout(sys.stderr):
            spec.loader.exec_module(module)
            found: Any = module.build() if hasattr(module, "build") else None
            if found is None:
                found = getattr(module, "platforms", None) or getattr(module, "platform", None)
    except (InputError, KeyboardInterrupt):
        raise
    except BaseException as exc:  # a stack's sys.exit() must not pass for a clean run
        raise _stack_error(path, exc) from None
    finally:
        sys.modules.pop(name, None)
        os.chdir(cwd)
    platforms = list(found) if isinstance(found, list | tuple) else [found]
    if not platforms or not all(isinstance(p, Platform) for p in platforms):
        raise InputError.single(
            str(path),
            "",
            "a Python stack must expose `platform`, `platforms` or `build()` returning Platforms",
        )
    overlays = getattr(module, "overlays", [])
    if not isinstance(overlays, list | tuple) or not all(isinstance(o, str) for o in overlays):
        raise InputError.single(str(path), "overlays", "must be a list of file paths")
    return platforms, [str(o) for o in overlays]


def _read_stack(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The spec documents of a stack file and the overlays it declares."""
    if not path.exists():
        raise InputError.single(str(path), "", "no such file")
    if path.suffix == ".py":
        read_text(path)  # the bounded reader first: a FIFO or /dev/zero would hang the import
        platforms, overlays = _run_python_stack(path)
        return [platform_document(p) for p in platforms], overlays
    doc = check_envelope(read_yaml(path), str(path), PLATFORM_KIND)
    declared = doc["metadata"].get("annotations", {}).get(OVERLAYS_ANNOTATION, "")
    return [doc], [o.strip() for o in declared.split(",") if o.strip()]


def _apply(base: dict[str, Any], origin: Origin, overlay_path: Path) -> tuple[dict[str, Any], Origin]:
    """Merge one overlay file onto `base`; its `metadata.name` names the result."""
    overlay = check_envelope(read_yaml(overlay_path), str(overlay_path), OVERLAY_KIND)
    repeated = duplicate_names(overlay.get("spec", {}), str(overlay_path))
    if repeated:
        raise InputError(repeated)
    part: dict[str, Any] = {"spec": overlay.get("spec", {})}
    name = overlay.get("metadata", {}).get("name")
    if name:
        part["metadata"] = {"name": name}
    return merge_spec(base, part, origin, str(overlay_path))


def _overlay_base(path: Path) -> str | None:
    doc = check_envelope(read_yaml(path), str(path), OVERLAY_KIND)
    base: str | None = doc.get("metadata", {}).get("annotations", {}).get(BASE_ANNOTATION)
    return base


def load_stack(path: str | Path, overlays: Sequence[str | Path] | None = None) -> list[LoadedPlatform]:
    """Load a stack; with `overlays`, merge them onto every platform, else add its declared variants."""
    path = Path(path)
    chosen = tuple(Path(o) for o in overlays or ())
    docs, declared = _read_stack(path)
    loaded: list[LoadedPlatform] = []
    problems: list[Problem] = []
    variants: list[tuple[dict[str, Any], tuple[Path, ...]]] = []
    if chosen:
        variants = [(doc, chosen) for doc in docs]
    else:
        variants = [(doc, ()) for doc in docs]
        for rel in declared:
            overlay_path = (path.parent / rel) if not Path(rel).is_absolute() else Path(rel)
            base = _overlay_base(overlay_path)
            targets = [d for d in docs if base in (None, d["metadata"]["name"])]
            if not targets:
                defined = ", ".join(d["metadata"]["name"] for d in docs)
                message = f"no platform {base!r} in {path} (platforms: {defined})"
                problems.append(Problem(str(overlay_path), "metadata.annotations", "", message))
            variants += [(d, (overlay_path,)) for d in targets]
    for doc, chain in variants:
        try:
            merged, origin = doc, Origin(str(path))
            if chain and (repeated := duplicate_names(doc.get("spec", {}), str(path))):
                raise InputError(repeated)
            for overlay_path in chain:
                merged, origin = _apply(merged, origin, overlay_path)
            platform = platform_from_document(merged, origin)
        except InputError as exc:
            problems += exc.problems
            continue
        try:
            manifests = _read_manifests(platform, path)
        except InputError as exc:
            problems += exc.problems
            continue
        applied = tuple(str(c) for c in chain)
        loaded.append(LoadedPlatform(platform, str(path), applied, merged, manifests, origin))
    names = [lp.platform.name for lp in loaded]
    for lp in loaded:
        if names.count(lp.platform.name) > 1:
            problems.append(
                Problem(
                    lp.overlays[-1] if lp.overlays else lp.source,
                    "metadata.name",
                    "",
                    f"platform name {lp.platform.name!r} is rendered twice",
                )
            )
    if problems:
        raise InputError(sorted(set(problems)))
    return loaded


def load_stacks(paths: Sequence[str | Path]) -> list[LoadedPlatform]:
    """Load several stacks, reporting every problem of every stack at once."""
    loaded: list[LoadedPlatform] = []
    problems: list[Problem] = []
    for path in paths:
        try:
            loaded += load_stack(path)
        except InputError as exc:
            problems += exc.problems
    names = [lp.platform.name for lp in loaded]
    for lp in loaded:
        if names.count(lp.platform.name) > 1:
            problems.append(
                Problem(lp.source, "metadata.name", "", f"platform {lp.platform.name!r} is defined twice")
            )
    if problems:
        raise InputError(sorted(set(problems)))
    return loaded
