"""Field types that take more when a model is built than they hold once it is: any sequence for a
tuple, and an object or its name for a reference (hera's `template: Union[str, Template]`).

`NodePool(migrates_in=pilot)` with `pilot = Wave(...)` and `NodePool(migrates_in="pilot")` build
the same pool: a reference always holds the name, so the spec, the plan and every renderer read
names, and YAML stays names. Type checkers and IDEs see a descriptor (PEP 681's descriptor-typed
fields): its `__set__` is what the constructor takes, its `__get__` what the attribute holds.
pydantic sees plain `tuple[X, ...]` and `DnsLabel` fields; a reference's validator takes the name
of an object of the referenced class and refuses any other model. Such a field's default is given
with `default(...)`: type checkers hold a class-body value to the descriptor's type, not to what it
holds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Annotated, Any, Generic, TypeVar

from pydantic import BaseModel, BeforeValidator, Field

from gpuplatform.model.base import DnsLabel

__all__ = ["Items", "OptionalRef", "Ref", "Refs", "default"]

T = TypeVar("T")


def default(value: object, *, min_length: int | None = None) -> Any:
    """`Field(default=value)` for a field of this module's types (typed Any: see the module)."""
    return Field(default=value, min_length=min_length)


def _name_of(kind: str) -> Callable[[Any], Any]:
    """A validator turning an object of class `kind` into its name; other values pass through."""

    def name(value: Any) -> Any:
        if not isinstance(value, BaseModel):
            return value
        if type(value).__name__ != kind:
            raise ValueError(f"expected a {kind} or its name, found a {type(value).__name__}")
        return getattr(value, "name", None)

    return name


if TYPE_CHECKING:

    class Items(Generic[T]):
        """A tuple once built; any sequence (a list) when building."""

        def __get__(self, instance: object, owner: Any) -> tuple[T, ...]: ...
        def __set__(self, instance: object, value: Sequence[T]) -> None: ...

    class Ref(Generic[T]):
        """The name of a `T` once built; a `T` or its name when building."""

        def __get__(self, instance: object, owner: Any) -> str: ...
        def __set__(self, instance: object, value: str | T) -> None: ...

    class OptionalRef(Generic[T]):
        """`Ref`, or None."""

        def __get__(self, instance: object, owner: Any) -> str | None: ...
        def __set__(self, instance: object, value: str | T | None) -> None: ...

    class Refs(Generic[T]):
        """A tuple of names of `T`s once built; any sequence of `T`s or names when building."""

        def __get__(self, instance: object, owner: Any) -> tuple[str, ...]: ...
        def __set__(self, instance: object, value: Sequence[str | T]) -> None: ...

else:

    class _Form:
        """`Form[X]` at run time: the pydantic type of the field (`build` of X's class name)."""

        def __init__(self, build: Callable[[Any], Any]) -> None:
            self._build = build

        def __getitem__(self, item: Any) -> Any:
            return self._build(item)

    def _ref(kind: Any) -> Any:
        return Annotated[
            DnsLabel, BeforeValidator(_name_of(kind if isinstance(kind, str) else kind.__name__))
        ]

    Items = _Form(lambda item: tuple[item, ...])
    Ref = _Form(_ref)
    OptionalRef = _Form(lambda kind: _ref(kind) | None)
    Refs = _Form(lambda kind: tuple[_ref(kind), ...])
