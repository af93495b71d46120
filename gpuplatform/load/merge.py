"""Overlay merge: mappings merge, lists of named items merge by `name`, other lists replace."""

from __future__ import annotations

from typing import Any

__all__ = ["merge_spec", "path_in"]


def _named(items: list[Any]) -> bool:
    return all(isinstance(i, dict) and isinstance(i.get("name"), str) for i in items)


def merge_spec(base: Any, overlay: Any) -> Any:
    """Return `base` with `overlay` merged onto it; neither argument is modified."""
    if isinstance(base, dict) and isinstance(overlay, dict):
        out = dict(base)
        for key, value in overlay.items():
            out[key] = merge_spec(base[key], value) if key in base else value
        return out
    if isinstance(base, list) and isinstance(overlay, list) and base and overlay and _named(base + overlay):
        merged = {item["name"]: item for item in base}
        order = [item["name"] for item in base]
        for item in overlay:
            name = item["name"]
            if name in merged:
                merged[name] = merge_spec(merged[name], item)
            else:
                merged[name] = item
                order.append(name)
        return [merged[n] for n in order]
    return overlay


def path_in(doc: Any, loc: tuple[int | str, ...]) -> bool:
    """Whether `doc` (an overlay) sets something at `loc` (list indexes resolved by name in base)."""
    node = doc
    for part in loc:
        if isinstance(node, dict) and isinstance(part, str) and part in node:
            node = node[part]
        else:
            return isinstance(node, list) and isinstance(part, int)
    return True
