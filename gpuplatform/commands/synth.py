"""synth and synth --check: loaded platforms -> validated bytes -> the output folder, or a drift report."""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuplatform.background import Background
from gpuplatform.commands.selection import load_selected
from gpuplatform.commands.wave_diff import adjacent_units
from gpuplatform.convert.handoff import add_converted_manifests
from gpuplatform.errors import GpuplatformError, InputError, Problem, RenderedOutputInvalid, format_problems
from gpuplatform.load.stacks import LoadedPlatform
from gpuplatform.model.limits import MAX_FILES, estimated_files
from gpuplatform.model.platform import Platform
from gpuplatform.output.location import check_location
from gpuplatform.output.serialize import LOCK_FILE, Serializer, lock_document
from gpuplatform.output.state_check import BACKUP, STAGING
from gpuplatform.output.write import (
    STATE_FILE,
    owned_tree,
    read_regular_file,
    refuse_linked_folder,
    tree_entries,
    write_trees,
)
from gpuplatform.plan.waves import Plan, plan_platform
from gpuplatform.policy.selectors import refuse_uncompilable
from gpuplatform.render.applicationset import (
    APPLICATIONSET_FOLDER,
    applicationset_name,
    render_applicationsets,
)
from gpuplatform.render.overview import OVERVIEW_FILE, render_overview
from gpuplatform.render.runbooks import render_runbooks
from gpuplatform.render.tree import Tree, render_tree, tree_collisions
from gpuplatform.versions import parse_release

if TYPE_CHECKING:
    from gpuplatform.simulate.verdict import Refusal

__all__ = [
    "NAME_MAX_BYTES",
    "Drift",
    "DriftReport",
    "PolicyRefusal",
    "SynthReport",
    "check_paths",
    "check_tree",
    "completed_files",
    "completion_files",
    "drift_command",
    "drift_of",
    "policy_findings",
    "render_all",
    "render_files",
    "render_trees",
    "runbook_files",
    "serialized_tree",
    "synth_command",
    "synth_stack",
    "synth_tree",
]


#: Longest file name (one path segment) that common file systems accept, in bytes.
NAME_MAX_BYTES = 255


#: A relative path of ASCII names that start with a letter, digit or `_` (never `.`, `..` or
#: empty): it stays in its tree, and when it is at most NAME_MAX_BYTES long so is each name.
_PLAIN_PATH = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*(?:/[A-Za-z0-9_][A-Za-z0-9._-]*)*")


def check_paths(source: str, files: Mapping[str, bytes]) -> None:
    """Refuse (InputError) rendered paths that leave the tree or that no file system can hold."""
    problems: set[Problem] = set()
    for rel in files:
        if len(rel) <= NAME_MAX_BYTES and _PLAIN_PATH.fullmatch(rel):
            continue
        parts = rel.split("/")
        if rel.startswith("/") or "\0" in rel or "\\" in rel or any(p in ("", ".", "..") for p in parts):
            problems.add(Problem(source, "", "", f"renders a path outside its tree: {rel!r}"))
        for part in parts:
            if len(part.encode()) > NAME_MAX_BYTES:
                message = (
                    f"renders a file name of {len(part.encode())} bytes, over {NAME_MAX_BYTES}: {part}; "
                    "shorten the names it is built from (domain, namespace, object name)"
                )
                problems.add(Problem(source, "", "", message))
    if problems:
        raise InputError(sorted(problems))


def render_files(
    loaded: LoadedPlatform,
    *,
    overrides: Sequence[str] = (),
    validate: bool = True,
    tree: Tree | None = None,
    runbooks: bool = True,
) -> dict[str, bytes]:
    """Every file of one platform's tree (`tree` when already rendered), the runbooks and the
    overview (unless `runbooks` is false: `tree` holds only some waves) and the lock file, validated."""
    if tree is None:
        refuse_uncompilable([loaded])
        tree = render_tree(plan_platform(loaded.platform))
    files = serialized_tree(loaded, tree, validate=validate)
    notes = _capacity_notes(loaded.platform) if runbooks else None
    return completed_files(loaded, files, overrides, notes)


def serialized_tree(
    loaded: LoadedPlatform, tree: Tree, *, validate: bool = True, paths: Collection[str] | None = None
) -> dict[str, bytes]:
    """The rendered tree's files (those of `paths`, when given) as validated bytes; InputError
    when the tree renders a path or an object twice, RenderedOutputInvalid when an object is invalid."""
    platform = loaded.platform
    collisions = tree_collisions(tree)
    if collisions:
        raise InputError(
            [Problem(loaded.source, "", "", f"platform {platform.name!r} {c}") for c in collisions]
        )
    return _serialized(loaded, tree, validate, paths)


def _serialized(
    loaded: LoadedPlatform, tree: Tree, validate: bool, paths: Collection[str] | None
) -> dict[str, bytes]:
    minor = parse_release(loaded.platform.kubernetes.version).minor
    return Serializer(minor, validate=validate).files(tree, paths)


def completed_files(
    loaded: LoadedPlatform,
    files: dict[str, bytes],
    overrides: Sequence[str],
    capacity_notes: Mapping[str, str] | None,
) -> dict[str, bytes]:
    """`files`, every path checked, with `completion_files` added."""
    check_paths(loaded.source, files)
    files.update(completion_files(loaded, files, overrides, capacity_notes))
    return files


def completion_files(
    loaded: LoadedPlatform,
    files: dict[str, bytes],
    overrides: Sequence[str],
    capacity_notes: Mapping[str, str] | None,
) -> dict[str, bytes]:
    """What completes a platform's rendered `files`: the runbooks and the overview `README.md`
    (when `capacity_notes`, the paragraphs `runbook_capacity_notes` gives, are known: `files` then
    hold every wave) and the lock file, their paths checked."""
    platform = loaded.platform
    added: dict[str, bytes] = {}
    if capacity_notes is not None:
        plan = plan_platform(platform)
        added = runbook_files(plan, files, capacity_notes)
        added[OVERVIEW_FILE] = render_overview(plan).encode()
    check_paths(loaded.source, added)
    stack_dir = Path(loaded.source).parent
    origin = {
        "stack": Path(loaded.source).name,
        "overlays": [Path(os.path.relpath(o, stack_dir)).as_posix() for o in loaded.overlays],
        "activeWave": platform.active_wave,
        "overrides": sorted(overrides),
    }
    added[LOCK_FILE] = lock_document(
        files | added, platform=platform.name, spec=loaded.document, origin=origin
    )
    return added


def runbook_files(
    plan: Plan, files: Mapping[str, bytes], capacity_notes: Mapping[str, str]
) -> dict[str, bytes]:
    """`runbooks/<NN>-<wave>.md` of `plan`, whose sync steps are cut to the units that change in
    the rendered `files` (the cut `plan --from/--to` makes)."""
    changed = adjacent_units(files, plan.waves)
    runbooks = render_runbooks(plan, capacity_notes, changed)
    return {f"runbooks/{name}": text.encode() for name, text in runbooks.items()}


class PolicyRefusal(GpuplatformError):
    """Error-level rules fired that the user did not override: nothing is written (exit 1)."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__(f"{len(problems)} policy error(s)")


def policy_findings(
    loaded: Sequence[LoadedPlatform],
    allow: Sequence[str] = (),
    trees: Mapping[str, Tree] | None = None,
    simulated: Mapping[str, tuple[Refusal, ...]] | None = None,
    capacity: Sequence[Problem] = (),
) -> list[Problem]:
    """Every rule finding of every platform (GP290 from `simulated` verdicts where given) and the
    `capacity` verdicts (GP280-GP282); PolicyRefusal when an error is not in `allow`.

    An `allow` code that names no rule is bad input: a typo must not pass for an override.
    """
    from gpuplatform.policy.allow import allowed, refuse_unknown_codes  # synth's child only (~50 ms)
    from gpuplatform.policy.rules import run_rules

    refuse_unknown_codes(allow)
    trees = trees or {}
    simulated = simulated or {}
    problems = [
        allowed(p, allow)
        for lp in loaded
        for p in run_rules(lp, tree=trees.get(lp.platform.name), simulated=simulated.get(lp.platform.name))
    ]
    problems += [allowed(p, allow) for p in capacity]
    blocking = [p for p in problems if p.severity == "error"]
    if blocking:
        raise PolicyRefusal(problems)
    return problems


def _refuse_oversized(loaded: Sequence[LoadedPlatform], files: int, about: str) -> None:
    if files > MAX_FILES:
        sources = sorted({lp.source for lp in loaded})
        message = f"the run would render {about}{files} files, over the limit of {MAX_FILES}; render fewer platforms at once"
        raise InputError([Problem(s, "", "", message) for s in sources])


def render_trees(loaded: Sequence[LoadedPlatform]) -> dict[str, Tree]:
    """Every platform's tree; a stack with several Argo CD platforms gives each the stack's
    ApplicationSets and every member's AppProject."""
    refuse_uncompilable(loaded)
    _refuse_oversized(loaded, sum(estimated_files(lp.platform) for lp in loaded), "about ")
    plans = {lp.platform.name: plan_platform(lp.platform) for lp in loaded}
    trees = {name: render_tree(plan) for name, plan in plans.items()}
    _refuse_oversized(loaded, sum(len(t.files) for t in trees.values()), "")
    for lp in loaded:
        add_converted_manifests(lp, plans[lp.platform.name], trees[lp.platform.name])
    by_stack: dict[str, list[str]] = {}
    for lp in loaded:
        if "argocd" in lp.platform.delivery.engines:
            by_stack.setdefault(lp.source, []).append(lp.platform.name)
    for source, names in by_stack.items():
        if len(names) > 1:
            stem = applicationset_name(source)
            objects = render_applicationsets(stem, [(plans[n], trees[n].files) for n in names])
            for name in names:
                trees[name].add_folder(APPLICATIONSET_FOLDER, objects, engines=False)
    return trees


def render_all(
    loaded: Sequence[LoadedPlatform], overrides: Sequence[str] = (), trees: Mapping[str, Tree] | None = None
) -> dict[str, dict[str, bytes]]:
    """Every platform's files, by platform name (reusing already rendered `trees`)."""
    trees = trees or render_trees(loaded)
    return {
        lp.platform.name: render_files(lp, overrides=overrides, tree=trees.get(lp.platform.name))
        for lp in loaded
    }


def _prunable(out: Path, rendered: Mapping[str, object]) -> list[str]:
    """Platform trees of ours in `out` that no loaded stack renders (what `synth` would prune)."""
    if not out.is_dir():
        return []
    return sorted(
        p.name
        for p in out.iterdir()
        if p.name not in rendered
        and not p.name.startswith(".")
        and not isinstance(owned_tree(p, p.name, digests=True), str)
    )


def synth_tree(
    loaded: Sequence[LoadedPlatform],
    out: str | Path,
    *,
    prune: bool = False,
    overrides: Sequence[str] = (),
    recover: bool = False,
) -> tuple[list[str], list[Problem]]:
    """Render and validate every platform in memory, then replace all their trees at once.

    Returns the platforms written and the findings (rule warnings, overridden errors as warnings,
    and the writer's warnings about folders it left in place).

    With `prune`, platform trees of ours that no loaded stack renders any more are removed. With
    `recover`, a killed run's folders are recovered from what they hold, its record unread
    (`output.write.recover`: for a record sealed with a key that is gone).
    Refuses (PolicyRefusal) when an error-level rule fires whose code is not in `overrides`;
    nothing in `out` changes unless every platform is written. The rules, the runbooks' capacity
    notes and the hand-offs' files are computed by a forked child (`Background`) while the parent
    serialises the waves; the runbooks and the lock files by another while the parent stages the
    waves. The simulation verdict (GP290) is reused from the verdict cache or replayed by a third
    child while the parent renders. The outcome, errors included, is a plain run's.
    """
    from gpuplatform.commands.verdicts import Simulated

    with Simulated(loaded) as simulation:
        trees = render_trees(loaded)
        verdicts = simulation.result()
    shares = {name: _child_share(tree) for name, tree in trees.items()}
    with Background(partial(_judged, loaded, overrides, trees, shares, verdicts)) as judged:
        try:
            files = {
                lp.platform.name: serialized_tree(
                    lp,
                    trees[lp.platform.name],
                    paths=trees[lp.platform.name].files.keys() - shares[lp.platform.name],
                )
                for lp in loaded
            }
        except GpuplatformError:
            judged.result()  # a policy refusal is reported before invalid output, as in a plain run
            _serialize_whole(loaded, trees)  # and the error names every invalid object
            raise
        findings, notes, theirs = judged.result()
    if theirs is None:  # an object of the child's share is invalid
        files = _serialize_whole(loaded, trees)
    else:
        files = {name: dict(sorted((own | theirs[name]).items())) for name, own in files.items()}
    for lp in loaded:  # before anything is staged: a path must not leave its tree
        check_paths(lp.source, files[lp.platform.name])
    with Background(partial(_completions, loaded, files, overrides, notes)) as completions:
        findings += write_trees(
            Path(out), files, prune=prune, rest=completions.result, recover_from_disk=recover
        )
    return sorted(files), findings


def _serialize_whole(
    loaded: Sequence[LoadedPlatform], trees: Mapping[str, Tree]
) -> dict[str, dict[str, bytes]]:
    return {lp.platform.name: serialized_tree(lp, trees[lp.platform.name]) for lp in loaded}


def _child_share(tree: Tree) -> set[str]:
    """The files the child serialises besides the rules and notes: the hand-offs, each object its
    own shape (none shares a template with the waves), about a fifth of the serialising."""
    return {path for path in tree.files if path.startswith("handoff/")}


def _judged(
    loaded: Sequence[LoadedPlatform],
    overrides: Sequence[str],
    trees: Mapping[str, Tree],
    shares: Mapping[str, set[str]],
    verdicts: Mapping[str, tuple[Refusal, ...]],
) -> tuple[list[Problem], dict[str, dict[str, str]], dict[str, dict[str, bytes]] | None]:
    """What synth computes while the parent serialises its share of the trees: the rule findings
    (PolicyRefusal on an error not overridden), every platform's runbook capacity notes and the
    files of `shares` (None when an object is invalid: the whole tree is then serialised again,
    so that the error names every invalid object)."""
    from gpuplatform.capacity.verdicts import capacity_problems  # in the child only, as `check` does

    capacity = [p for lp in loaded for p in capacity_problems(lp)]  # as `check` prints them
    findings = policy_findings(loaded, overrides, trees, verdicts, capacity)
    notes = {lp.platform.name: _capacity_notes(lp.platform) for lp in loaded}
    try:
        files = {
            lp.platform.name: _serialized(lp, trees[lp.platform.name], True, shares[lp.platform.name])
            for lp in loaded
        }
    except RenderedOutputInvalid:
        return findings, notes, None
    return findings, notes, files


def _completions(
    loaded: Sequence[LoadedPlatform],
    files: Mapping[str, dict[str, bytes]],
    overrides: Sequence[str],
    notes: Mapping[str, Mapping[str, str]],
) -> dict[str, dict[str, bytes]]:
    """Every platform's `completion_files` (runbooks and lock file): what synth's child renders
    while the parent stages the rest."""
    return {
        lp.platform.name: completion_files(lp, files[lp.platform.name], overrides, notes[lp.platform.name])
        for lp in loaded
    }


@dataclass(frozen=True)
class SynthReport:
    """What `synth` wrote (or refused to write) and what it found on the way."""

    out: Path
    """The output folder as the caller named it (paths in `text()` start with it)."""
    written: list[str]
    """The platforms written, by name (none when refused)."""
    findings: list[Problem]
    """Rule and capacity findings (warnings, overridden errors), the writer's warnings; when
    refused, every finding, the errors among them."""
    notes: list[Problem] = field(default_factory=list)
    """Where the tree went (outside a Git work tree, an `info` note)."""
    refused: bool = False
    """Error-level rules fired that were not overridden: nothing was written."""

    @property
    def exit_code(self) -> int:
        """1 when refused."""
        return 1 if self.refused else 0

    def summary(self) -> str:
        """What the CLI prints last: each platform written, or why nothing was."""
        if self.refused:
            return "policy errors: nothing written (fix them, or override with --allow CODE)"
        return "\n".join(f"wrote {self.out / name}" for name in self.written)

    def text(self) -> str:
        """The findings, one a line, then the summary."""
        return "\n".join(part for part in (format_problems(self.findings), self.summary()) if part)

    def as_dict(self) -> dict[str, Any]:
        return {
            "out": str(self.out),
            "written": self.written,
            "refused": self.refused,
            "problems": [p.as_dict() for p in sorted(self.findings + self.notes)],
        }


def synth_command(
    loaded: Sequence[LoadedPlatform],
    out: Path,
    *,
    shown: Path | None = None,
    prune: bool = False,
    overrides: Sequence[str] = (),
    recover: bool = False,
) -> SynthReport:
    """`synth`: check where the tree goes (`output.location`), render, judge and write every
    platform into `out` (an absolute path: a stack may have changed directory); `shown` is how the
    report names it (default `out`); `recover`: see `synth_tree`."""
    notes = check_location(loaded, out)
    try:
        written, findings = synth_tree(loaded, out, prune=prune, overrides=overrides, recover=recover)
    except PolicyRefusal as exc:
        return SynthReport(shown or out, [], exc.problems, notes, refused=True)
    return SynthReport(shown or out, written, findings, notes)


@dataclass(frozen=True)
class DriftReport:
    """What `synth` would change in a folder (`synth --check`): nothing when it is current."""

    out: Path
    drift: list[Drift]
    platforms: int
    notes: list[Problem] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """1 when a file differs."""
        return 1 if self.drift else 0

    def text(self) -> str:
        if not self.drift:
            return f"{self.out}: up to date ({self.platforms} platform(s))"
        lines = [f"{d.state}: {self.out / d.path}" for d in self.drift]
        return "\n".join(
            [*lines, f"{self.out} is stale: {len(self.drift)} file(s) differ; run `gpuplatform synth`"]
        )

    def as_dict(self) -> dict[str, Any]:
        return {"out": str(self.out), "drift": [{"path": d.path, "state": d.state} for d in self.drift]}


def drift_command(
    loaded: Sequence[LoadedPlatform],
    out: Path,
    *,
    shown: Path | None = None,
    prune: bool = False,
    overrides: Sequence[str] = (),
) -> DriftReport:
    """`synth --check`: where `out` differs from what synth renders now; writes nothing."""
    notes = check_location(loaded, out)
    drift = check_tree(loaded, out, prune=prune, overrides=overrides)
    return DriftReport(shown or out, drift, len(loaded), notes)


def synth_stack(
    stack: str | None,
    overlays: Sequence[str],
    out: Path,
    *,
    check: bool = False,
    overrides: Sequence[str] = (),
    recover: bool = False,
) -> SynthReport | DriftReport:
    """`gpuplatform synth [--check]` on STACK (default: every stack in stacks/): `drift_command`
    when `check`, else `synth_command`; the stale files of a stack no longer there are pruned only
    when every stack is rendered."""
    resolved = Path(os.path.abspath(out))  # before a stack runs: a stack may change directory
    loaded = load_selected(stack, overlays)
    if check:
        return drift_command(loaded, resolved, shown=out, prune=stack is None, overrides=overrides)
    return synth_command(
        loaded, resolved, shown=out, prune=stack is None, overrides=overrides, recover=recover
    )


@dataclass(frozen=True)
class Drift:
    """One file that differs between the rendered tree and the folder."""

    path: str
    state: str
    """`changed`, `missing` (rendered, not on disk), `extra` (on disk, not rendered) or `interrupted`
    (a staging or backup folder, or a state record, an interrupted synth left)."""


def check_tree(
    loaded: Sequence[LoadedPlatform], out: str | Path, *, prune: bool = False, overrides: Sequence[str] = ()
) -> list[Drift]:
    """What `synth` would change in `out` (empty when the committed tree is current)."""
    return drift_of(render_all(loaded, overrides), Path(out), prune=prune)


def drift_of(rendered: dict[str, dict[str, bytes]], out: Path, *, prune: bool = False) -> list[Drift]:
    """The files where `out` differs from already rendered trees (links and other non-files differ).

    InputError when `out` itself is a link or not a folder."""
    refuse_linked_folder(out)
    drift: list[Drift] = []
    for name in sorted(rendered):
        root = out / name
        on_disk = tree_entries(root)
        for rel in sorted(set(rendered[name]) | set(on_disk)):
            path = f"{name}/{rel}"
            if rel not in on_disk:
                drift.append(Drift(path, "missing"))
            elif rel not in rendered[name]:
                drift.append(Drift(path, "extra"))
            elif read_regular_file(root / rel, len(rendered[name][rel])) != rendered[name][rel]:
                drift.append(Drift(path, "changed"))
    if prune:
        drift += [Drift(f"{name}/", "extra") for name in _prunable(out, rendered)]
    return drift + _interrupted(out)


def _interrupted(out: Path) -> list[Drift]:
    """What an interrupted synth left in `out`: its staging and backup folders (every platform's:
    recovery of a killed run may need them) and a state file that is not empty."""
    left = (
        sorted(f"{e.name}/" for e in os.scandir(out) if e.name.startswith((f"{STAGING}.", f"{BACKUP}.")))
        if out.is_dir()
        else []
    )
    state = out / STATE_FILE
    if os.path.isfile(state) and not os.path.islink(state) and os.path.getsize(state) > 0:
        left.append(STATE_FILE)
    return [Drift(path, "interrupted") for path in left]


def _capacity_notes(platform: Platform) -> dict[str, str]:
    """`runbook_capacity_notes` of the platform's plan; the capacity model is imported here, in
    synth's child, not by every process that imports this module (~0.1 s)."""
    from gpuplatform.capacity.verdicts import runbook_capacity_notes

    return runbook_capacity_notes(plan_platform(platform))
