"""Spec documents (`apiVersion: gpuplatform.dev/v1alpha1`) <-> Platform models, with located errors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, get_args

from pydantic import BaseModel, ValidationError

from gpuplatform.errors import InputError, Problem, format_loc
from gpuplatform.load.merge import Origin
from gpuplatform.model.platform import Platform
from gpuplatform.model.references import Loc

__all__ = [
    "API_VERSION",
    "OVERLAY_KIND",
    "PLATFORM_KIND",
    "check_envelope",
    "duplicate_names",
    "platform_document",
    "platform_from_document",
    "problems_from_validation",
    "spec_loc",
]

API_VERSION = "gpuplatform.dev/v1alpha1"
PLATFORM_KIND = "Platform"
OVERLAY_KIND = "PlatformOverlay"
_ENVELOPE = ("apiVersion", "kind", "metadata", "spec")
_METADATA = ("name", "labels", "annotations")


def check_envelope(doc: Any, file: str, kind: str) -> dict[str, Any]:
    """Check the Kubernetes-style envelope of a spec or overlay document; return it."""
    if not isinstance(doc, dict):
        raise InputError.single(
            file, "", f"expected a {kind} document (a mapping), found {type(doc).__name__}"
        )
    problems: list[Problem] = []

    def bad(loc: str, message: str) -> None:
        problems.append(Problem(file=file, loc=loc, code="", message=message))

    for key in doc:
        if key not in _ENVELOPE:
            bad(str(key), f"unknown top-level field (expected {', '.join(_ENVELOPE)})")
    if doc.get("apiVersion") != API_VERSION:
        bad("apiVersion", f"must be {API_VERSION!r}, found {doc.get('apiVersion')!r}")
    if doc.get("kind") != kind:
        bad("kind", f"must be {kind!r}, found {doc.get('kind')!r}")
    meta = doc.get("metadata", {} if kind == OVERLAY_KIND else None)
    if not isinstance(meta, dict):
        bad("metadata", "must be a mapping with at least `name`")
    else:
        for key in meta:
            if key not in _METADATA:
                bad(f"metadata.{key}", "unknown field (expected name, labels, annotations)")
        if kind == PLATFORM_KIND and "name" not in meta:
            bad("metadata.name", "field required")
        annotations = meta.get("annotations", {})
        if not isinstance(annotations, dict) or not all(isinstance(v, str) for v in annotations.values()):
            bad("metadata.annotations", "must map strings to strings")
    if not isinstance(doc.get("spec", {}), dict):
        bad("spec", "must be a mapping")
    if problems:
        raise InputError(problems)
    return doc


def duplicate_names(doc: Any, file: str, at: Loc = ("spec",)) -> list[Problem]:
    """Every repeated `name` in a list of named items anywhere in `doc`, at the path of the repeat.

    Run on an overlay and on the spec it merges onto, before merging: merging by name would
    otherwise fold two items of one name into one, silently.
    """
    problems: list[Problem] = []
    if isinstance(doc, dict):
        for key, value in doc.items():
            problems += duplicate_names(value, file, (*at, key))
    elif isinstance(doc, list):
        first: dict[str, int] = {}
        for i, item in enumerate(doc):
            name = item.get("name") if isinstance(item, dict) else None
            if isinstance(name, str) and first.setdefault(name, i) != i:
                where = format_loc((*at, first[name]))
                problems.append(
                    Problem(file, format_loc((*at, i, "name")), "", f"{name!r} is already defined at {where}")
                )
            problems += duplicate_names(item, file, (*at, i))
    return problems


def platform_document(platform: Platform) -> dict[str, Any]:
    """The spec document of a Platform (the canonical form overlays merge onto)."""
    body = platform.model_dump(mode="json", by_alias=True, exclude_none=True)
    name = body.pop("name")
    return {"apiVersion": API_VERSION, "kind": PLATFORM_KIND, "metadata": {"name": name}, "spec": body}


def _doc_loc(loc: tuple[int | str, ...]) -> Loc:
    if loc and loc[0] == "name":
        return ("metadata", *loc)
    return ("spec", *loc)


def _located(origin: Origin, loc: Loc, message: str) -> Problem:
    file, where = origin.locate(loc)
    return Problem(file=file, loc=format_loc(where), code="", message=message)


def spec_loc(loc: Sequence[int | str]) -> Loc:
    """The spec path of a Platform error's `loc`, field names as the spec writes them
    (`('node_pools', 0, 'gpus_per_node')` from Python -> `('spec', 'nodePools', 0, 'gpusPerNode')`)."""
    aliased: list[int | str] = []
    model: type[BaseModel] | None = Platform
    for part in loc:
        fields = model.model_fields.items() if model is not None and isinstance(part, str) else ()
        field = next((f for name, f in fields if part in (name, f.alias)), None)
        if field is not None:
            aliased.append(field.alias or part)
            model = _model_in(field.annotation)
        else:
            aliased.append(part)
    return _doc_loc(tuple(aliased))


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The model a field holds, directly or inside a tuple, mapping or union (None: plain data)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def problems_from_validation(
    exc: ValidationError, origin: Origin, prefix: Loc | None = None
) -> list[Problem]:
    """One Problem per pydantic error, located in the file (stack or overlay) that wrote the field."""
    problems = []
    for err in exc.errors():
        loc = prefix + tuple(err["loc"]) if prefix is not None else spec_loc(err["loc"])
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            message = "unknown field"
        problems.append(_located(origin, loc, message))
    return problems


def platform_from_document(doc: dict[str, Any], origin: str | Origin) -> Platform:
    """Validate a merged spec document into a Platform, with every problem located where it was written.

    `origin` is the file the document was read from, or the Origin of a merge (stack + overlays).
    """
    origin = Origin(origin) if isinstance(origin, str) else origin
    body = dict(doc.get("spec") or {})
    body["name"] = doc["metadata"].get("name")
    try:
        return Platform.model_validate(body)
    except ValidationError as exc:
        raise InputError(problems_from_validation(exc, origin)) from None
