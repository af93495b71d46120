"""`gpuplatform check`: every selector check and every policy rule over one loaded platform."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from gpuplatform.background import Background
from gpuplatform.commands.selection import load_platforms
from gpuplatform.commands.verdicts import Simulated
from gpuplatform.errors import InputError, Problem, format_problems
from gpuplatform.gates.nodes import pool_selector
from gpuplatform.inventory.resource_slices import Pool, read_resource_slices
from gpuplatform.load.stacks import LoadedPlatform
from gpuplatform.load.yaml_input import read_data
from gpuplatform.model.platform import Platform
from gpuplatform.policy.allow import allowed, refuse_unknown_codes
from gpuplatform.policy.devices import inventory_devices, modelled_devices
from gpuplatform.policy.rules import run_rules
from gpuplatform.policy.selectors import ChainCache, SelectorRow, check_target, compile_targets
from gpuplatform.policy.targets import selector_targets
from gpuplatform.snapshot.manifest import unread_kinds
from gpuplatform.snapshot.read import Snapshot, load_snapshot

__all__ = [
    "CheckReport",
    "check_command",
    "check_findings",
    "check_platform",
    "check_platforms",
    "check_table",
    "cluster_node_names",
]


@dataclass
class CheckReport:
    """The selector table and every finding of one platform."""

    platform: str
    rows: list[SelectorRow] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def exit_code(self) -> int:
        """1 when an error-level finding was not overridden."""
        return 1 if self.errors else 0

    def text(self) -> str:
        """The selector table, then every finding, one a line."""
        return "\n".join(part for part in (check_table(self), format_problems(self.problems)) if part)

    def as_dict(self) -> dict[str, Any]:
        """The JSON form (`--format json`)."""
        return {
            "platform": self.platform,
            "selectors": [
                {
                    "kind": r.target.kind,
                    "name": r.target.name,
                    "loc": r.target.loc,
                    "modelledDevices": r.modelled,
                    "perPool": r.per_pool,
                    "bestNode": r.best_node,
                    "inventoryDevices": r.inventory,
                }
                for r in self.rows
            ],
            "problems": [p.as_dict() for p in sorted(self.problems)],
        }


def check_platform(
    loaded: LoadedPlatform,
    inventory: Sequence[Pool] | None = None,
    cluster_nodes: frozenset[str] | None = None,
    snapshot: Snapshot | None = None,
    simulated: Simulated | None = None,
    allow: Sequence[str] = (),
) -> CheckReport:
    """Selector checks against modelled pools (and `inventory`), then the policy rules (with the
    cluster `snapshot`, those that compare the plan with what runs), the simulation verdict (GP290)
    among them; errors whose code is in `allow` become warnings that say so.

    The capacity verdicts are computed meanwhile by a forked child (`Background`), the simulation
    verdict by another unless `simulated` has it (`Simulated`, which reuses cached verdicts). Every selector
    is compiled first; the modelled fleet and the inventory are then prepared once,
    reduced to what those selectors read, and every target is evaluated against them.
    """
    platform = loaded.platform
    report = CheckReport(platform.name)
    with (
        Background(partial(_capacity_problems, loaded, snapshot)) as capacity,
        simulated or Simulated([loaded], snapshot=snapshot) as simulation,
    ):
        compiled = compile_targets(platform, selector_targets(platform), loaded.source)
        reads = {read for c in compiled for _, s in c.selectors or () for read in s.reads}
        modelled, problems = modelled_devices(platform, loaded.source, reads)
        report.problems += problems
        prepared = inventory_devices(inventory, reads) if inventory is not None else None
        published = _published_pools(platform, inventory or (), snapshot)
        caches: dict[int, ChainCache] = {}
        for target in compiled:
            row, found = check_target(target, modelled, prepared, loaded.source, caches, published)
            report.rows.append(row)
            report.problems += found
        verdict = simulation.result()[platform.name]
        report.problems += run_rules(loaded, cluster_nodes, snapshot=snapshot, simulated=verdict)
        report.problems += capacity.result()
    report.problems = [allowed(p, allow) for p in report.problems]
    return report


def _published_pools(
    platform: Platform, inventory: Sequence[Pool], snapshot: Snapshot | None
) -> Callable[[str], bool]:
    """Whether the inventory covers a node of a spec pool. With a snapshot, a pool's nodes are found
    by its selector (`gates/nodes.py`), as the gates find them, and a pool none of whose nodes
    publishes is not judged against the inventory (it has not moved to DRA in that cluster); without
    one, only static pools' nodes are known and other pools are taken as covered."""
    nodes = {p.node for p in inventory}
    listed = snapshot.items("nodes") if snapshot is not None else None
    found: dict[str, bool] = {}
    for pool in platform.node_pools:
        if pool.nodes:
            found[pool.name] = bool(nodes & set(pool.nodes))
        elif listed is not None:
            found[pool.name] = bool(nodes & set(pool_selector(pool).found(listed)))
    return lambda name: found.get(name, True)


def _capacity_problems(loaded: LoadedPlatform, snapshot: Snapshot | None) -> list[Problem]:
    """`capacity_problems` (on the snapshot's cluster when given), the capacity model imported by
    `check`'s child only (~60 ms)."""
    from gpuplatform.capacity.verdicts import capacity_problems

    return capacity_problems(loaded, str(snapshot.folder) if snapshot is not None else None)


def cluster_node_names(snapshot: Path) -> frozenset[str]:
    """Node names in a snapshot folder's `nodes.json` (`kubectl get nodes -o json`)."""
    path = snapshot / "nodes.json"
    doc = read_data(path, follow_links=False)
    items = doc.get("items") if isinstance(doc, dict) else None
    if not isinstance(items, list):
        raise InputError.single(str(path), "items", "expected `kubectl get nodes -o json` output (a List)")
    names = set()
    for i, item in enumerate(items):
        meta = item.get("metadata") if isinstance(item, dict) else None
        name = meta.get("name") if isinstance(meta, dict) else None
        if not isinstance(name, str):
            raise InputError.single(str(path), f"items[{i}].metadata.name", "missing")
        names.add(name)
    return frozenset(names)


def check_platforms(
    loaded: Sequence[LoadedPlatform],
    inventory: Sequence[str],
    snapshot: str | None,
    allow: Sequence[str] = (),
) -> list[CheckReport]:
    """`check` for every loaded platform against the same inventory and snapshot; `allow` names
    the error-level rules the user overrides (InputError for a code no rule has). A selector that
    does not compile (GP310) is unusable input, as synth and plan say: InputError."""
    refuse_unknown_codes(allow)
    paths = list(inventory)
    nodes = None
    snap = None
    if snapshot is not None:
        folder = Path(snapshot)
        nodes = cluster_node_names(folder)
        snap = load_snapshot(folder)
        slices = folder / "resourceslices.json"
        if os.path.islink(slices):
            raise InputError.single(
                str(slices), "", "is a symbolic link; gpuplatform does not follow links in a snapshot"
            )
        unread = snap.manifest is not None and unread_kinds(snap.manifest, ("resourceslices",))
        if slices.is_file() and not unread:
            paths.append(str(slices))
    pools = read_resource_slices(*paths) if paths else None
    with Simulated(loaded, snapshot=snap) as simulated:
        reports = [check_platform(lp, pools, nodes, snap, simulated, allow) for lp in loaded]
    uncompilable = {(p.file, p.loc): p for r in reports for p in sorted(r.problems) if p.code == "GP310"}
    if uncompilable:
        raise InputError(sorted(uncompilable.values()))  # unusable input, as synth and plan say
    return reports


def check_table(report: CheckReport) -> str:
    """The selector table a person reads in a terminal."""
    pools = sorted({p for r in report.rows for p in r.per_pool})
    header = ["KIND", "NAME", "DEVICES", *[f"{p}" for p in pools], "BEST NODE", "INVENTORY"]
    rows = [
        [
            r.target.kind,
            r.target.name,
            str(r.modelled),
            *[str(r.per_pool.get(p, 0)) for p in pools],
            str(r.best_node),
            "-" if r.inventory is None else str(r.inventory),
        ]
        for r in report.rows
    ]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = [f"platform {report.platform}"]
    lines += [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    ]
    return "\n".join(lines)


def check_command(
    stack: str,
    overlays: Sequence[str],
    platform: str | None,
    inventory: Sequence[str],
    snapshot: str | None,
    allow: Sequence[str] = (),
) -> list[CheckReport]:
    """`gpuplatform check` on the platforms of STACK."""
    return check_platforms(load_platforms(stack, overlays, platform), inventory, snapshot, allow)


def check_findings(reports: Sequence[CheckReport]) -> str:
    """What `check` prints on stderr: each platform's findings under its name (an overlay's are
    its own), then the count of the distinct errors and warnings."""
    parts = [
        (f"platform {r.platform}:\n" if len(reports) > 1 else "") + format_problems(r.problems)
        for r in reports
        if r.problems
    ]
    problems = [p for r in reports for p in set(r.problems)]
    errors = sum(p.severity == "error" for p in problems)
    return "\n".join([*parts, f"{errors} error(s), {len(problems) - errors} warning(s)"])
