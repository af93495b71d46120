"""Unified diffs: what `synth` would change on disk, or what really changes between two waves.

Between two waves the wave label (and a hand-off's `spec.wave`) differs on every object, and the
names of gate Jobs and validation Jobs carry a digest of their wave, so that Flux runs them again
on every transition. Neither is a change in the cluster: the wave is masked as `<wave>`, and those
Jobs are paired by their gate or validation id label (`gpuplatform.dev/gate`,
`gpuplatform.dev/validation`) and namespace, their digests masked (also where a gate names a
validation Job), so an identical gate is no change at all.
Hand-offs (`handoff/<NN>-<wave>/`) are compared like the wave folders: they hold the real change of
provisioner pools, NIM services and converted workloads.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from gpuplatform.convert.handoff import add_converted_manifests
from gpuplatform.errors import InputError, Problem
from gpuplatform.load.stacks import LoadedPlatform
from gpuplatform.output.serialize import Serializer
from gpuplatform.output.synth import drift_of, render_all, render_files
from gpuplatform.plan.transitions import APPLY_ORDER, Step, Transition, platform_transitions
from gpuplatform.plan.waves import WaveState, plan_platform
from gpuplatform.render.gate_jobs import GATE_LABEL
from gpuplatform.render.tree import LAYERS, Tree, render_wave
from gpuplatform.render.validation import VALIDATION_LABEL
from gpuplatform.versions import parse_release

__all__ = [
    "FileChange",
    "WaveDiff",
    "diff_against_disk",
    "diff_waves",
    "loaded_wave_diffs",
    "platform_wave_diff",
    "reviewed_transitions",
    "unified",
]

HANDOFF = "handoff"
_GATES = "50-gates/"
_DIGEST_NAME = re.compile(rb"^  name: ([a-z0-9-]+?)-([0-9a-f]{10})$", re.MULTILINE)
_NAMESPACE = re.compile(rb"^  namespace: '?([a-z0-9-]+)'?$", re.MULTILINE)
_ROLE = re.compile(
    rb"^    ("
    + re.escape(GATE_LABEL.encode())
    + rb"|"
    + re.escape(VALIDATION_LABEL.encode())
    + rb"): '?([a-z0-9-]+)'?$",
    re.MULTILINE,
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


def diff_against_disk(loaded: Sequence[LoadedPlatform], out: Path) -> str:
    """The unified diff from the files in `out` to what synth renders now (empty: no change)."""
    rendered = render_all(loaded)
    parts: list[str] = []
    for drift in drift_of(rendered, out):
        platform, _, rel = drift.path.partition("/")
        on_disk = out / drift.path
        old = on_disk.read_bytes() if on_disk.is_file() else None
        parts.append(unified(old, rendered[platform].get(rel), f"a/{drift.path}", f"b/{drift.path}"))
    return "".join(parts)


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
    def layers(self) -> tuple[str, ...]:
        """The wave layers whose files change, in apply (name) order."""
        return tuple(sorted({c.layer for c in self.changes if c.layer != HANDOFF and "/" in c.key}))

    @property
    def handoffs(self) -> tuple[FileChange, ...]:
        return tuple(c for c in self.changes if c.layer == HANDOFF)

    def unified(self) -> str:
        """Every change as a unified diff, with the real paths of the two trees."""
        return "".join(
            unified(c.old, c.new, f"a/{self.platform}/{c.old_path}", f"b/{self.platform}/{c.new_path}")
            for c in self.changes
        )


def _side(files: Mapping[str, bytes], state: WaveState) -> dict[str, tuple[str, bytes, bytes]]:
    """key -> (path, content with gate digests masked, content) of one wave's folder and hand-off;
    the wave is masked in both."""
    wave = re.escape(state.name.encode())
    label = re.compile(rb"^(\s+gpuplatform\.dev/wave|  wave): '?" + wave + rb"'?$", re.MULTILINE)
    side: dict[str, tuple[str, bytes, bytes]] = {}
    gates: dict[bytes, bytes] = {}
    for root, prefix in ((f"waves/{state.dir_name}/", ""), (f"{HANDOFF}/{state.dir_name}/", f"{HANDOFF}/")):
        for path, content in files.items():
            if not path.startswith(root):
                continue
            key = prefix + path[len(root) :]
            if key.startswith(_GATES):
                name, role = _DIGEST_NAME.search(content), _ROLE.search(content)
                if name is not None and role is not None:
                    gates[name.group(1) + b"-" + name.group(2)] = name.group(1) + b"-<digest>"
                    kind = "gate" if role.group(1) == GATE_LABEL.encode() else "validation"
                    namespace = _NAMESPACE.search(content)
                    where = f"@{namespace.group(1).decode()}" if namespace else ""
                    key = f"{key.rsplit('/', 1)[0]}/{kind}:{role.group(2).decode()}{where}"
            text = label.sub(rb"\1: <wave>", content)
            side[key] = (path, text, text)
    for key, (path, text, raw) in side.items():
        if key.startswith(_GATES):
            masked = text
            for real, placeholder in gates.items():
                masked = masked.replace(real, placeholder)
            side[key] = (path, masked, raw)
    return side


def diff_waves(files: Mapping[str, bytes], platform: str, old: WaveState, new: WaveState) -> WaveDiff:
    """The changes from wave `old` to wave `new` in one platform's rendered `files`.

    Gate digests are masked where a gate is on both sides (they pair); a gate on one side only is
    shown as it is.
    """
    before, after = _side(files, old), _side(files, new)
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
    return WaveDiff(platform, tuple(changes))


def loaded_wave_diffs(loaded: Sequence[LoadedPlatform], source: str, target: str) -> list[WaveDiff]:
    """`diff --waves FROM TO` of every platform; InputError naming the waves when one is unknown."""
    problems, pairs = [], []
    for lp in loaded:
        plan = plan_platform(lp.platform)
        names = [w.name for w in plan.waves]
        missing = [w for w in dict.fromkeys((source, target)) if w not in names]
        problems += [Problem("--waves", "", "", plan.no_wave(wave)) for wave in missing]
        if not missing:
            pairs.append((lp, plan.wave(source), plan.wave(target)))
    if problems:
        raise InputError(problems)
    return [platform_wave_diff(lp, a, b) for lp, a, b in pairs]


def platform_wave_diff(loaded: LoadedPlatform, old: WaveState, new: WaveState) -> WaveDiff:
    """Render only the two waves' folders and hand-offs of `loaded`, diff them, and validate what
    the diff shows strictly, as synth would (RenderedOutputInvalid names an invalid object)."""
    plan = plan_platform(loaded.platform)
    tree = Tree(loaded.platform.name)
    states = (old,) if old.index == new.index else (old, new)
    for state in states:
        render_wave(tree, plan, state, LAYERS)
    add_converted_manifests(loaded, plan, tree, states)
    found = diff_waves(render_files(loaded, tree=tree, validate=False), loaded.platform.name, old, new)
    shown = {p for c in found.changes for p in (c.old_path, c.new_path) if p is not None}
    objects = {p: content for p, content in tree.files.items() if p in shown and isinstance(content, list)}
    Serializer(parse_release(loaded.platform.kubernetes.version).minor).files(
        Tree(tree.platform, dict(objects))
    )
    return found


def reviewed_transitions(loaded: Sequence[LoadedPlatform], source: str, target: str) -> list[Transition]:
    """`plan --from/--to`: each platform's transition with only the layers whose rendered files
    change in its apply order, and the hand-offs that change."""
    order = [layer for layer, _ in APPLY_ORDER]
    found = []
    for lp, t in zip(loaded, platform_transitions(loaded, source, target), strict=True):
        plan = plan_platform(lp.platform)
        changed = platform_wave_diff(lp, plan.wave(source), plan.wave(target))
        steps = {s.layer: s for s in t.steps if s.layer in changed.layers}
        steps |= {
            layer: Step(layer, what)
            for layer, what in APPLY_ORDER
            if layer in changed.layers and layer not in steps
        }
        ordered = tuple(steps[layer] for layer in order if layer in steps) if t.direction != "none" else ()
        found.append(replace(t, steps=ordered, handoffs=tuple(c.describe() for c in changed.handoffs)))
    return found
