"""YAML aliases resolved before a manifest is edited: each place gets its own copy.

A round-trip load gives an anchor and every alias of it one shared object, so editing one
container's resources through it would edit every container that aliases them: two containers
sharing `resources: &gpu` would be given one claim, and the second device requested would go unused.
Each alias is replaced by a copy of what it names (written out in full), so each container asks for
its own devices.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["unshare"]


def unshare(node: Any, seen: set[int] | None = None) -> None:
    """Give every mapping and list under `node` that is reached a second time its own copy, in place."""
    seen = set() if seen is None else seen
    children = (
        list(node.items()) if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    )
    for key, child in children:
        if not isinstance(child, dict | list):
            continue
        if id(child) in seen:
            child = copy.deepcopy(child)
            node[key] = child
        seen.add(id(child))
        unshare(child, seen)
