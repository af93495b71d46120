"""The checks a Platform runs on itself once every field is valid: its size, its cross-references
and the names it derives, each raised as a located pydantic error.

The loader and a Python stack see the same `ValidationError`: `loc` is the spec path without the
document's `spec` (`('nodePools', 1, 'migratesIn')`, camelCase as in a spec), `msg` the words the
CLI prints after it, `input` the value found there and `type` one of CHECK_TYPES.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

from gpuplatform.model.identities import identity_errors
from gpuplatform.model.limits import size_errors
from gpuplatform.model.references import Loc, reference_errors

if TYPE_CHECKING:
    from gpuplatform.model.platform import Platform

__all__ = ["CHECK_TYPES", "platform_errors", "raise_platform_errors", "value_at"]

#: The `type` of each check's errors: a platform too big for one cluster, a dangling, repeated or
#: misordered name, two spec items that would render as one object or file.
CHECK_TYPES = ("platform_size", "platform_reference", "platform_identity")


def platform_errors(p: Platform) -> list[tuple[str, Loc, str]]:
    """(type, spec path, message) of every problem; the size first and alone (the other checks
    walk every list, which a platform over the limits must not make them do)."""
    size = size_errors(p)
    if size:
        return [("platform_size", loc, message) for loc, message in size]
    found = [("platform_reference", loc, message) for loc, message in reference_errors(p)]
    return found + [("platform_identity", loc, message) for loc, message in identity_errors(p)]


def value_at(model: BaseModel, loc: Sequence[int | str]) -> Any:
    """What `model` holds at `loc` (field aliases, indexes, mapping keys); None where nothing is."""
    here: Any = model
    for part in loc:
        if isinstance(here, BaseModel) and isinstance(part, str):
            field = next((n for n, f in type(here).model_fields.items() if part in (n, f.alias)), None)
            here = getattr(here, field) if field is not None else None
        elif isinstance(here, Mapping):
            here = here.get(part)
        elif isinstance(here, tuple | list) and isinstance(part, int) and 0 <= part < len(here):
            here = here[part]
        else:
            return None
    return here


def raise_platform_errors(p: Platform) -> None:
    """Raise one ValidationError with every problem `platform_errors` finds (nothing when none)."""
    found = platform_errors(p)
    if not found:
        return
    details: list[InitErrorDetails] = []
    for kind, loc, message in found:
        assert loc[:1] == ("spec",), loc
        details.append(
            InitErrorDetails(type=PydanticCustomError(kind, message), loc=loc[1:], input=value_at(p, loc[1:]))
        )
    raise ValidationError.from_exception_data("Platform", details)
