"""What each cloud accepts as a node group name: read by the load (a takeover's groups) and by the
cloud commands that create, resize and delete them (`render/cloud_commands.py`).

Sources: AKS REST API "Agent Pools - Create Or Update" (`^[a-z][a-z0-9]{0,11}$`, 12 characters
the Linux limit); GKE node pool names are lowercase RFC 1035 labels of at most 40 characters and
EKS node group names at most 63 letters, digits, `-` or `_` (from third-party references, not the
clouds' own: the limits a create would hit first).
"""

from __future__ import annotations

import re

__all__ = ["node_group_name_problem"]

#: What each cloud accepts as a node group name, and the rule in words.
_NAMES = {
    "aks": (
        re.compile(r"[a-z][a-z0-9]{0,11}"),
        "a lowercase letter then at most 11 lowercase letters or digits (an AKS Linux agent pool name)",
    ),
    "gke": (
        re.compile(r"[a-z](?:[-a-z0-9]{0,38}[a-z0-9])?"),
        "a lowercase letter, then lowercase letters, digits or '-', not ending in '-', at most 40 characters "
        "(a GKE node pool name)",
    ),
    "eks": (
        re.compile(r"[0-9A-Za-z][A-Za-z0-9_-]{0,62}"),
        "a letter or digit, then letters, digits, '-' or '_', at most 63 characters (an EKS node group name)",
    ),
}


def node_group_name_problem(cloud: str, name: str) -> str:
    """Why `cloud` would refuse `name` for a node group ("" when it accepts it)."""
    if cloud not in _NAMES:
        return f"no node-group commands for cloud {cloud!r}"
    pattern, rule = _NAMES[cloud]
    return "" if pattern.fullmatch(name) else f"{name!r} is not a valid {cloud} node group name: {rule}"
