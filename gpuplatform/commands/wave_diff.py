"""What really changes between two rendered waves of one platform, file by file.

Between two waves the wave label (and a hand-off's `spec.wave`, and the wave's folder in an Argo CD
Application's path) differs on every object, and the names of gate, validation and allocator-switch
Jobs (and of each gate's facts ConfigMap) carry a digest of their wave, so that Flux runs them
again on every transition. Neither is a
change in the cluster: the wave is masked as `<wave>` (written as the dumper writes it, quoted when
a reader would take it for a number or a boolean), and those Jobs are paired by their id label
(`gpuplatform.dev/gate`, `gpuplatform.dev/validation`, `gpuplatform.dev/switch`) and namespace,
their digests masked (also where a gate names a validation Job), so an identical gate is no change;
a gate's facts ConfigMap pairs with its gate's the same way and shows what the facts change.
Hand-offs (`handoff/<NN>-<wave>/`) are compared like the wave folders: they hold the real change of
provisioner pools, NIM services and converted workloads.
"""

from __future__ import annotations

import difflib
import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from gpuplatform.labels import GATE_LABEL, SWITCH_LABEL, VALIDATION_LABEL, WAVE_LABEL
from gpuplatform.output.yaml import scalar
from gpuplatform.plan.sync_order import SyncUnit, unit_of_folder
from gpuplatform.plan.waves import WaveState
from gpuplatform.render.kustomize_paths import join_path
from gpuplatform.render.tree import SHARED_ROOTS

__all__ = ["HANDOFF", "FileChange", "WaveDiff", "adjacent_units", "diff_waves", "unified"]

HANDOFF = "handoff"
#: Labels of the Jobs whose names carry a digest of their wave: Job kind in the pairing key, by label.
_ROLES = {GATE_LABEL: "gate", VALIDATION_LABEL: "validation", SWITCH_LABEL: "switch"}
_DIGEST_NAME = re.compile(rb"^  name: ([a-z0-9-]+?)-([0-9a-f]{10})$", re.MULTILINE)
_NAMESPACE = re.compile(rb"^  namespace: '?([a-z0-9-]+)'?$", re.MULTILINE)
_ROLE = re.compile(
    rb"^    (" + b"|".join(re.escape(k.encode()) for k in _ROLES) + rb"): '?([a-z0-9-]+)'?$", re.MULTILINE
)


def unified(old: bytes | None, new: bytes | None, old_name: str, new_name: str) -> str:
    """A unified diff of two file contents (`None`: the file does not exist on that side)."""
    a = old.decode(errors="replace").splitlines(keepends=True) if old is not None else []
    b = new.decode(errors="replace").splitlines(keepends=True) if new is not None else []
    return "".join(
        difflib.unified_diff(
            a, b, old_name if old is not None else "/dev/null", new_name if new is not None else "/dev/null"
        )
    )


@dataclass(frozen=True)
class FileChange:
    """One file that differs between two waves, paired by `key` (its path inside the wave folder,
    `handoff/...` for hand-offs, `50-gates/<phase>/gate:<id>` for a gate Job)."""

    key: str
    old_path: str | None
    new_path: str | None
    old: bytes | None
    new: bytes | None

    @property
    def state(self) -> str:
        """`added`, `removed` or `changed`."""
        return "added" if self.old is None else "removed" if self.new is None else "changed"

    @property
    def layer(self) -> str:
        """The wave layer (`10-nodes`, …) or `handoff`."""
        return self.key.split("/", 1)[0]

    def describe(self) -> str:
        """`<state> <Kind> <namespace>/<name> (<file>)` of the object the file holds."""
        content = self.new if self.new is not None else self.old
        path = self.new_path or self.old_path or self.key
        what = Path(path).name
        try:
            doc = next(iter(yaml.load_all(content or b"", Loader=yaml.CSafeLoader)), None)
        except yaml.YAMLError:
            doc = None
        if isinstance(doc, dict) and isinstance(doc.get("metadata"), dict):
            meta = doc["metadata"]
            name = "/".join(str(meta[k]) for k in ("namespace", "name") if k in meta)
            what = f"{doc.get('kind')} {name} ({what})"
        return f"{self.state} {what}"


@dataclass(frozen=True)
class WaveDiff:
    """What changes between two rendered waves of one platform."""

    platform: str
    changes: tuple[FileChange, ...]

    @property
    def units(self) -> frozenset[str]:
        """The sync units (`plan.sync_order.SYNC_UNITS` ids) whose folders hold a changed file."""
        folders = {c.key.rsplit("/", 1)[0] for c in self.changes if c.layer != HANDOFF and "/" in c.key}
        return frozenset(u.id for u in map(_unit, folders) if u is not None)

    @property
    def handoffs(self) -> tuple[FileChange, ...]:
        return tuple(c for c in self.changes if c.layer == HANDOFF)

    def unified(self) -> str:
        """Every change as a unified diff, with the real paths of the two trees."""
        return "".join(
            unified(c.old, c.new, f"a/{self.platform}/{c.old_path}", f"b/{self.platform}/{c.new_path}")
            for c in self.changes
        )


def _unit(folder: str) -> SyncUnit | None:
    """The sync unit of a wave folder; none for the folders that only list others (`50-gates`)."""
    try:
        return unit_of_folder(folder)
    except KeyError:
        return None


_Side = dict[str, tuple[str, bytes, bytes]]


def _by_folder(files: Mapping[str, bytes]) -> dict[str, list[str]]:
    """Paths by their wave or hand-off folder (`waves/<NN>-<wave>`, `handoff/<NN>-<wave>`), and the
    objects of the shared folders waves name (`render.tree.SHARED_ROOTS`: `nodes/<pool>/<state>`) by theirs."""
    index: dict[str, list[str]] = {}
    for path in files:
        top, _, rest = path.partition("/")
        if top in ("waves", HANDOFF) and "/" in rest:
            index.setdefault(f"{top}/{rest.split('/', 1)[0]}", []).append(path)
        elif top in SHARED_ROOTS and not path.endswith("/kustomization.yaml"):
            index.setdefault(path.rsplit("/", 1)[0], []).append(path)
    return index


def _shared(files: Mapping[str, bytes], index: Mapping[str, list[str]], root: str) -> dict[str, str]:
    """key -> path of the objects in the shared folders the wave at `root` names, keyed as if they
    were in the naming folder (`10-nodes/node_gpu-01.yaml`): a node that changes state shows as its
    labels' change, not as a file moved."""
    out: dict[str, str] = {}
    for path in index.get(root, ()):
        if not path.endswith("/kustomization.yaml"):
            continue
        folder = path[: -len("/kustomization.yaml")]
        listed = yaml.load(files[path], Loader=yaml.CSafeLoader) or {}
        for resource in listed.get("resources") or []:
            target = join_path(folder, str(resource))
            for shared in index.get(target, ()) if target.split("/", 1)[0] in SHARED_ROOTS else ():
                out[f"{folder[len(root) + 1 :]}/{shared.rsplit('/', 1)[1]}"] = shared
    return out


def _side(files: Mapping[str, bytes], index: Mapping[str, list[str]], state: WaveState) -> _Side:
    """key -> (path, content with Job digests masked, content) of one wave's folder and hand-off.

    In both, the wave is masked: its label and a hand-off's `spec.wave` (matched as the dumper
    writes the name, `output.yaml.scalar`), and the wave's folder in paths (an Argo CD
    Application's `source.path`). Digests are masked in the Jobs and in the files of their folders
    (the kustomizations that list them), the only places that name them.
    """
    wave = scalar(state.name).encode()
    label = (f"{WAVE_LABEL}: ".encode() + wave + b"\n", f"{WAVE_LABEL}: <wave>\n".encode())
    spec_wave = (b"\n  wave: " + wave + b"\n", b"\n  wave: <wave>\n")
    folder = (f"/waves/{state.dir_name}/".encode(), b"/waves/<wave>/")
    side: _Side = {}
    digests: dict[bytes, bytes] = {}
    job_folders: set[str] = set()
    for root, prefix in ((f"waves/{state.dir_name}", ""), (f"{HANDOFF}/{state.dir_name}", f"{HANDOFF}/")):
        for path in index.get(root, ()):
            content = files[path]
            key = prefix + path[len(root) + 1 :]
            facts = b"\nkind: ConfigMap\n" in content
            if facts or b"\nkind: Job\n" in content:
                name, role = _DIGEST_NAME.search(content), _ROLE.search(content)
                if name is not None and role is not None:
                    digests[name.group(1) + b"-" + name.group(2)] = name.group(1) + b"-<digest>"
                    kind = _ROLES[role.group(1).decode()] + ("-facts" if facts else "")
                    namespace = _NAMESPACE.search(content)
                    where = f"@{namespace.group(1).decode()}" if namespace else ""
                    key = f"{key.rsplit('/', 1)[0]}/{kind}:{role.group(2).decode()}{where}"
                    job_folders.add(key.rsplit("/", 1)[0])
            text = content.replace(*label).replace(*folder)
            if prefix:
                text = text.replace(*spec_wave)
            side[key] = (path, text, text)
    for key, path in _shared(files, index, f"waves/{state.dir_name}").items():
        side[key] = (path, files[path], files[path])
    for key, (path, text, raw) in side.items():
        if key.rsplit("/", 1)[0] not in job_folders and b"\nkind: Job\n" not in text:
            continue
        masked = text
        for real, placeholder in digests.items():
            if real in masked:
                masked = masked.replace(real, placeholder)
        side[key] = (path, masked, raw)
    return side


def _changes(before: _Side, after: _Side) -> tuple[FileChange, ...]:
    changes = []
    for key in sorted(set(before) | set(after)):
        a, b = before.get(key), after.get(key)
        if a is not None and b is not None:
            if a[1] != b[1]:
                changes.append(FileChange(key, a[0], b[0], a[1], b[1]))
        elif a is not None:
            changes.append(FileChange(key, a[0], None, a[2], None))
        elif b is not None:
            changes.append(FileChange(key, None, b[0], None, b[2]))
    return tuple(changes)


def diff_waves(files: Mapping[str, bytes], platform: str, old: WaveState, new: WaveState) -> WaveDiff:
    """The changes from wave `old` to wave `new` in one platform's rendered `files`.

    Gate digests are masked where a gate is on both sides (they pair); a gate on one side only is
    shown as it is.
    """
    index = _by_folder(files)
    return WaveDiff(platform, _changes(_side(files, index, old), _side(files, index, new)))


def adjacent_units(
    files: Mapping[str, bytes], states: Sequence[WaveState]
) -> dict[tuple[str, str], frozenset[str]]:
    """For each pair of adjacent waves, both ways: the sync units whose rendered files change
    (each wave's side is masked once)."""
    index = _by_folder(files)
    sides = [_side(files, index, s) for s in states]
    found: dict[tuple[str, str], frozenset[str]] = {}
    for i, (a, b) in enumerate(itertools.pairwise(states)):
        units = WaveDiff("", _changes(sides[i], sides[i + 1])).units
        found[(a.name, b.name)] = found[(b.name, a.name)] = units
    return found
