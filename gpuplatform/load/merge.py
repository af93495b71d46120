"""Overlay merge: mappings merge, lists of named items merge by `name`, other lists replace.

An overlay says what it means: an item of a named list must name an item of the base (it changes
that item), unless it is marked `$add: true` (it is appended) or `$remove: true` (the base's item is
dropped: a staging overlay without a production workload). Anything else is refused at the
overlay's own path, so a typo cannot append, or remove, a wave, a pool or a tenant.

The merge remembers where every list item of the result came from, so that an error found in the
merged document is reported in the file that wrote the field, at that file's own index.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from gpuplatform.errors import InputError, Problem, format_loc

__all__ = ["ADD_MARKER", "REMOVE_MARKER", "Loc", "Origin", "merge_spec", "parse_loc"]

#: The key that marks an overlay list item as an addition (`$add: true`); removed before validation.
ADD_MARKER = "$add"
#: The key that marks an overlay list item as the removal of the base's item of that name.
REMOVE_MARKER = "$remove"

Loc = tuple[int | str, ...]
_TOKEN = re.compile(r'\[(\d+)\]|\["((?:[^"\\]|\\.)*)"\]|\.?([^.\[\]]+)')


def parse_loc(text: str) -> Loc:
    """`spec.waves[3].stage` -> ("spec", "waves", 3, "stage"); a quoted key (`x["a.b/c"]`) is one key."""
    return tuple(int(index) if index else quoted or key for index, quoted, key in _TOKEN.findall(text))


@dataclass(frozen=True)
class _Layer:
    """One overlay applied: its file, its document and, per merged named list, where each item came
    from as (base index or None, overlay index or None)."""

    file: str
    doc: Any
    items: dict[Loc, list[tuple[int | None, int | None]]]


@dataclass(frozen=True)
class Origin:
    """Where the parts of a merged spec document came from: the stack file, then each overlay."""

    file: str
    layers: tuple[_Layer, ...] = field(default=())

    def locate(self, loc: Loc) -> tuple[str, Loc]:
        """The file that wrote `loc` of the merged document, and the path in that file."""
        for layer in reversed(self.layers):
            written, loc_there = _through(layer, loc)
            if written:
                return layer.file, loc_there
            loc = loc_there
        return self.file, loc


def _through(layer: _Layer, loc: Loc) -> tuple[bool, Loc]:
    """(True, path in the overlay) when `layer` wrote `loc`, else (False, the path before the layer):
    base items keep their index unless the layer removed an item before them (`$remove`).

    Inside an item the overlay added, or a list it replaced, everything is the overlay's.
    """
    node: Any = layer.doc
    mine: list[int | str] = []
    base: list[int | str] = []
    for depth, part in enumerate(loc):
        sources = layer.items.get(tuple(base)) if isinstance(part, int) else None
        if sources is not None and isinstance(part, int) and part < len(sources):
            base_index, overlay_index = sources[part]
            if overlay_index is None:
                assert base_index is not None
                return False, (*base, base_index, *loc[depth + 1 :])
            node = node[overlay_index]
            mine.append(overlay_index)
            if base_index is None:
                return True, (*mine, *loc[depth + 1 :])
            base.append(base_index)
            continue
        if isinstance(part, int) and isinstance(node, list):
            return True, (*mine, *loc[depth:])
        if not isinstance(node, dict) or part not in node:
            return False, (*base, *loc[depth:])
        node = node[part]  # null included: an overlay's `key: null` is written by the overlay
        mine.append(part)
        base.append(part)
    return True, tuple(mine)


def _named(items: list[Any]) -> bool:
    return bool(items) and all(isinstance(i, dict) and isinstance(i.get("name"), str) for i in items)


@dataclass
class _Merge:
    file: str
    items: dict[Loc, list[tuple[int | None, int | None]]] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    def refuse(self, loc: Loc, message: str) -> None:
        self.problems.append(Problem(self.file, format_loc(loc), "", message))

    def merge(self, base: Any, overlay: Any, at: Loc, mine: Loc) -> Any:
        if isinstance(overlay, dict) and isinstance(base, dict | None):
            out = dict(base or {})
            for key, value in overlay.items():
                out[key] = self.merge(out.get(key), value, (*at, key), (*mine, key))
            return out
        if isinstance(overlay, list) and _named(overlay) and (base is None or base == [] or _named(base)):
            return self.merge_named(base or [], overlay, at, mine)
        if overlay is None and isinstance(base, list) and base:
            self.refuse(
                mine,
                "is null, not a list: an overlay changes a list item by item (name the items to change; "
                f"`{ADD_MARKER}: true` adds one) or replaces it with the whole list it should be",
            )
            return base
        if isinstance(overlay, list):
            for i, item in enumerate(overlay):
                for marker in (ADD_MARKER, REMOVE_MARKER):
                    if isinstance(item, dict) and marker in item:
                        self.refuse((*mine, i, marker), f"only items of a list merged by name take {marker}")
        return overlay

    def merge_named(self, base: list[Any], overlay: list[Any], at: Loc, mine: Loc) -> list[Any]:
        """Items naming a base item merge onto it; items marked `$add: true` are appended."""
        index = {item["name"]: i for i, item in enumerate(base)}
        merged = list(base)
        sources: list[tuple[int | None, int | None]] = [(i, None) for i in range(len(base))]
        names = ", ".join(index) or "none"
        removed: set[int] = set()
        for k, item in enumerate(overlay):
            add = item.get(ADD_MARKER, False)
            remove = item.get(REMOVE_MARKER, False)
            body = {key: value for key, value in item.items() if key not in (ADD_MARKER, REMOVE_MARKER)}
            here = (*mine, k)
            if add not in (True, False):
                self.refuse((*here, ADD_MARKER), f"must be true (found {add!r})")
            elif remove not in (True, False):
                self.refuse((*here, REMOVE_MARKER), f"must be true (found {remove!r})")
            elif remove and (add or set(body) != {"name"}):
                self.refuse(
                    (*here, REMOVE_MARKER),
                    f"an item marked {REMOVE_MARKER} has only its name: it removes the base's item, "
                    "it changes or adds nothing",
                )
            elif remove and item["name"] not in index:
                self.refuse(
                    (*here, "name"),
                    f"{item['name']!r} names nothing in the base's {format_loc(at)} (names: {names})",
                )
            elif remove:
                removed.add(index[item["name"]])
            elif add and item["name"] in index:
                self.refuse(
                    (*here, "name"),
                    f"{item['name']!r} is already in the base's {format_loc(at)}: drop {ADD_MARKER} to change it",
                )
            elif add:
                merged.append(body)
                sources.append((None, k))
            elif item["name"] not in index:
                self.refuse(
                    (*here, "name"),
                    f"{item['name']!r} names nothing in the base's {format_loc(at)} (names: {names}); "
                    f"mark the item `{ADD_MARKER}: true` to add it",
                )
            else:
                i = index[item["name"]]
                merged[i] = self.merge(base[i], body, (*at, i), here)
                sources[i] = (i, k)
        kept = [i for i in range(len(merged)) if i not in removed]
        self.items[at] = [sources[i] for i in kept]
        return [merged[i] for i in kept]


def merge_spec(
    base: dict[str, Any], overlay: dict[str, Any], origin: Origin, file: str
) -> tuple[dict[str, Any], Origin]:
    """`base` with the overlay document `overlay` (written in `file`) merged onto it, and the origin
    of the result; InputError at the overlay's own paths for items that do not say what they mean.
    Neither argument is modified."""
    work = _Merge(file)
    merged = work.merge(base, overlay, (), ())
    if work.problems:
        raise InputError(work.problems)
    return merged, Origin(origin.file, (*origin.layers, _Layer(file, overlay, work.items)))
