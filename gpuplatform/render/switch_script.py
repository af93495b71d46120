"""What a rendered allocator-switch Job does, read back from its script (`render/allocator_switch.py`).

One reader for the simulator (which acts on nothing else) and the renderer's tests. Each condition
is read with the line that fails the check on it, and the wait with the loop that runs the check: a
condition or a wait the script does not have (or that this reader does not recognise) is absent,
so a Job that changed shape waits for less, never for more.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpuplatform.render.meta import Obj

__all__ = ["SwitchScript", "parse_switch_job"]

_VARIABLE = re.compile(r"^([A-Z_]+)='([^']*)'$", re.MULTILINE)
_REMOVE = re.compile(r'kubectl label node "\$node" (\S+)-;')
_SET = re.compile(r'kubectl label node "\$node" ([^=\s]+)=(\S+);')
_GUARD = re.compile(r'if check_node "\$node" >/dev/null; then kubectl label node')
_PENDING = re.compile(r'pending\(\) \{ kubectl get nodes -l "([^"]*)"')
_WAIT = re.compile(r"^until out=\$\(check 2>&1\); do$", re.MULTILINE)
_PLUGIN_PODS = re.compile(
    r'pods=\$\(kubectl get pods -n "\$DRA_NAMESPACE" -o json\).*?endswith\("([^"]+)"\).*?\n'
    r'\s*if \[ "\$n" != 0 \]; then echo [^\n]*; rc=1; fi',
    re.DOTALL,
)
_SLICES = re.compile(
    r'\.spec\.driver == "([^"]+)" and \.spec\.nodeName == \$n\)\] \| length\'\)\n'
    r'\s*if \[ "\$s" != 0 \]; then echo [^\n]*; rc=1; fi'
)
_ALLOCATABLE = re.compile(
    r'advertised=\$\(kubectl get node "\$1" -o json \| jq -r \'\[\(\.status\.allocatable // \{\}\) \| to_entries\[\]'
    r'\s*\| select\(\(\.key \| startswith\("([^"]+)"\)\) and \(\(\.value \| tostring\) != "0"\)\)[^\n]*\n'
    r'\s*if \[ -n "\$advertised" \]; then echo [^\n]*; rc=1; fi'
)
_HELD = re.compile(
    r'held=\$\(.*?\.metadata\.labels\["([^"]+)"\] == "([^"]+)" or '
    r"\(\[\(\.spec\.initContainers // \[\]\) \+ \(\.spec\.containers // \[\]\) \| \.\[\]\.resources"
    r'\s*\| \(\.limits // \{\}\), \(\.requests // \{\}\) \| keys\[\] \| select\(startswith\("([^"]+)"\)\)\] \| length\) > 0\)'
    r".*?\n\s*for pod in \$held; do echo [^\n]*; rc=1; done",
    re.DOTALL,
)


@dataclass(frozen=True)
class SwitchScript:
    """The data of one switch Job's script; `None` where the script has no such step."""

    action: str
    nodes: tuple[str, ...]
    """`release`: the nodes it takes the label off (`NODES`)."""
    namespace: str | None
    """`release`: where it looks for kubelet plugin pods (`DRA_NAMESPACE`)."""
    selects: tuple[tuple[str, str | None], ...]
    """`enable`: the pending nodes' selector, `(key, value)` to match, `(key, None)` to be absent."""
    label: str | None
    value: str | None
    """The label it removes (`release`, value `None`) or sets to `value` (`enable`)."""
    waits: bool
    """It runs its check until it holds (`enable`: or labels only a node whose check holds)."""
    plugin_suffix: str | None
    """`release` waits for no pod of a DaemonSet named `*<suffix>` on the node."""
    slice_driver: str | None
    """`release` waits for no ResourceSlice of this driver on the node."""
    allocatable: str | None
    """`enable` waits for every resource with this prefix to leave the node's allocatable."""
    pod_label: tuple[str, str] | None
    requested: str | None
    """`enable` waits for no live pod with `pod_label` or whose containers or init containers request
    a resource with the prefix `requested` on the node."""


def _script(obj: Obj) -> str:
    containers = obj["spec"]["template"]["spec"].get("containers") or [{}]
    command = containers[0].get("command") or []
    return str(command[-1]) if command else ""


def _selector(text: str, variables: dict[str, str]) -> tuple[tuple[str, str | None], ...]:
    for name, value in variables.items():
        text = text.replace(f"${name}", value)
    terms: list[tuple[str, str | None]] = []
    for term in filter(None, text.split(",")):
        if term.startswith("!"):
            terms.append((term[1:], None))
        else:
            key, _, value = term.partition("=")
            terms.append((key, value))
    return tuple(terms)


def _group(pattern: re.Pattern[str], script: str, index: int = 1) -> str | None:
    found = pattern.search(script)
    return found.group(index) if found else None


def parse_switch_job(obj: Obj, action: str) -> SwitchScript:
    """Read the switch Job `obj` (its `gpuplatform.dev/switch` label is `action`) from its script."""
    script = _script(obj)
    variables = dict(_VARIABLE.findall(script))
    pending = _PENDING.search(script)
    set_label = _SET.search(script)
    held = _HELD.search(script)
    return SwitchScript(
        action=action,
        nodes=tuple(variables.get("NODES", "").split()),
        namespace=variables.get("DRA_NAMESPACE"),
        selects=_selector(pending.group(1), variables) if pending else (),
        label=set_label.group(1) if set_label else _group(_REMOVE, script),
        value=set_label.group(2) if set_label else None,
        waits=_WAIT.search(script) is not None or _GUARD.search(script) is not None,
        plugin_suffix=_group(_PLUGIN_PODS, script),
        slice_driver=_group(_SLICES, script),
        allocatable=_group(_ALLOCATABLE, script),
        pod_label=(held.group(1), held.group(2)) if held else None,
        requested=held.group(3) if held else None,
    )
