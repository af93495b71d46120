"""The package's layers: every import, module level or inside a function, points down a layer.

`LAYERS` is the architecture of docs/architecture.md as data: packages in the order they may
import each other. A package imports only itself and packages listed before it, so the imports
between packages form a DAG that draws top to bottom; a new package must be placed here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO

PACKAGE = REPO / "gpuplatform"

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "facts",
        (
            "errors",
            "labels",
            "versions",
            "runtime",
            "background",
            "kube",
            "model",
            "cel",
            "validate",
            "charts",
        ),
    ),
    ("load", ("load", "inventory")),
    ("plan", ("gates", "plan")),
    ("render", ("render",)),
    ("output", ("output",)),
    ("analysis", ("adopt", "convert", "evidence", "capacity", "simulate", "policy", "rehearse")),
    ("commands", ("commands", "cdk8s", "testing")),
    ("cli", ("_stdout", "cli")),
)
ORDER: tuple[str, ...] = tuple(name for _, names in LAYERS for name in names)
#: The one module allowed to name layers above its own: a Platform's verbs (`platform.synth(out)`)
#: run the commands, importing them when called and their reports' types for type checkers only.
FRONT_DOORS: dict[str, frozenset[str]] = {
    "gpuplatform/model/verbs.py": frozenset({"commands", "simulate", "rehearse"}),
}


#: Packages that name types of a package above them for type checkers only (under
#: `if TYPE_CHECKING:`, never imported at run time): a gate says which waves have it in the plan's
#: terms, and the plan asks the gates which a wave has.
TYPES_FROM_ABOVE: dict[str, frozenset[str]] = {"gates": frozenset({"plan"})}


#: Modules whose role is narrower than their package's layer, and the only modules of the package
#: each may import (module level or inside a function): prefixes of dotted names below `gpuplatform.`.
MODULE_ROLES: dict[str, tuple[str, frozenset[str]]] = {
    "gpuplatform/labels.py": ("data: label keys and resource names, importing nothing", frozenset()),
    "gpuplatform/commands/selection.py": (
        "what a command runs on: reads stacks, knows no command",
        frozenset({"errors", "load.stacks"}),
    ),
    "gpuplatform/cli.py": (
        "parse, call one command, print, exit: no library work of its own",
        frozenset(
            {
                "_stdout",
                "errors",
                "runtime",
                "commands",
                "output.state_key",  # the CLI's runtime seals state with the user's key
                "policy.explain",  # `explain`: one lookup, printed as it is
                "adopt.importer",  # `import operator-values`: one call, its lines printed
            }
        ),
    ),
}


#: Packages of one concept whose modules play the parts of several layers: each module stands where
#: the package it names stands in `ORDER`, and its imports are checked from there. A concept's
#: `__init__.py` imports nothing of the package; other modules import its modules by name.
CONCEPTS: dict[str, dict[str, str]] = {
    "kueue": {
        "model": "model",
        "plan": "plan",
        "render": "render",
        "runbook": "render",
        "evidence": "evidence",
        "capacity": "capacity",
        "simulate": "simulate",
        "rules": "policy",
    },
    "snapshot": {
        "project": "load",
        "shapes": "load",
        "manifest": "load",
        "read": "load",
        "kubectl": "evidence",
        "write": "evidence",
        "take": "evidence",
    },
}


def role_of(parts: tuple[str, ...] | list[str]) -> str:
    """The package a module (its dotted parts below `gpuplatform`) stands in: its own, or the one
    its concept names for it; a concept's `__init__` stands below everything, a concept imported
    whole (`import gpuplatform.kueue`) above everything."""
    if parts[0] not in CONCEPTS:
        return parts[0]
    if len(parts) == 1:
        return f"{parts[0]} (import its modules by name)"
    return ORDER[0] if parts[1] == "__init__" else CONCEPTS[parts[0]][parts[1]]


def package_of(path: Path) -> str:
    """`model` for gpuplatform/model/base.py, `cli` for gpuplatform/cli.py, `plan` for
    gpuplatform/kueue/plan.py (`CONCEPTS`)."""
    return role_of([part.removesuffix(".py") for part in path.relative_to(PACKAGE).parts])


def imported_modules(source: str, module: str, is_package: bool = False) -> list[tuple[int, str]]:
    """(line, absolute module) of every import in `source` of `module`, relative ones resolved."""
    package = module if is_package else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target == "gpuplatform":
                found += [(node.lineno, f"gpuplatform.{alias.name}") for alias in node.names]
            else:
                found.append((node.lineno, target))
    return found


def imports_of(path: Path) -> list[tuple[int, str]]:
    """`imported_modules` of a file of the package."""
    module = ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
    return imported_modules(path.read_text(), module, path.name == "__init__.py")


def upward_imports(edges: list[tuple[str, str, str]]) -> list[str]:
    """The edges (importer package, imported package, where) that do not point down `ORDER`,
    but for a front door's (`FRONT_DOORS`)."""
    rank = {name: i for i, name in enumerate(ORDER)}
    return [
        f"{where}: {src} imports {dst}, which is not below it"
        for src, dst, where in edges
        if src != dst
        and rank.get(dst, len(ORDER)) >= rank[src]
        and dst not in FRONT_DOORS.get(where.rpartition(":")[0], ())
    ]


def type_only_lines(source: str) -> set[int]:
    """The lines of the imports of `source` under `if TYPE_CHECKING:` (never run)."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            lines |= {
                n.lineno for s in node.body for n in ast.walk(s) if isinstance(n, ast.Import | ast.ImportFrom)
            }
    return lines


def package_edges() -> list[tuple[str, str, str]]:
    """Every import between two packages of gpuplatform/ (the public front, __init__.py, aside),
    but a package's imports of types only, where `TYPES_FROM_ABOVE` allows them."""
    edges: list[tuple[str, str, str]] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "__init__.py":
            continue
        typed = type_only_lines(path.read_text())
        for line, target in imports_of(path):
            parts = target.split(".")
            if parts[0] != "gpuplatform" or len(parts) < 2:
                continue
            dst = role_of(parts[1:])
            if line in typed and dst in TYPES_FROM_ABOVE.get(package_of(path), ()):
                continue
            edges.append((package_of(path), dst, f"{path.relative_to(REPO)}:{line}"))
    return edges


def test_every_package_has_a_layer() -> None:
    packages = {
        package_of(p) for p in PACKAGE.rglob("*.py") if p.relative_to(PACKAGE).parts[0] not in CONCEPTS
    }
    assert sorted(packages - set(ORDER) - {"__init__"}) == [], (
        "place the new package in LAYERS and docs/architecture.md"
    )
    assert sorted(set(ORDER) - packages) == []


@pytest.mark.parametrize("concept", sorted(CONCEPTS))
def test_every_module_of_a_concept_has_its_part(concept: str) -> None:
    modules = {p.stem for p in (PACKAGE / concept).glob("*.py")} - {"__init__"}
    assert modules == set(CONCEPTS[concept]), f"name the part of each module of {concept}/ in CONCEPTS"
    assert set(CONCEPTS[concept].values()) <= set(ORDER)
    init = PACKAGE / concept / "__init__.py"
    assert [t for _, t in imports_of(init) if t.startswith("gpuplatform")] == []


def test_a_concept_module_is_checked_from_its_part() -> None:
    assert role_of(["kueue", "render"]) == "render"
    assert upward_imports([(role_of(["kueue", "plan"]), role_of(["render", "meta"]), "x.py:1")]) != []
    assert upward_imports([(role_of(["render", "tree"]), role_of(["kueue", "render"]), "x.py:1")]) == []
    assert upward_imports([("render", role_of(["kueue"]), "x.py:1")]) != []


def test_imports_only_point_down() -> None:
    assert upward_imports(package_edges()) == []


@pytest.mark.parametrize("module", sorted(MODULE_ROLES))
def test_a_module_imports_only_what_its_role_needs(module: str) -> None:
    _role, allowed = MODULE_ROLES[module]
    inside = [
        t.removeprefix("gpuplatform.") for _, t in imports_of(REPO / module) if t.startswith("gpuplatform.")
    ]
    assert [n for n in inside if not any(n == a or n.startswith(f"{a}.") for a in allowed)] == []


def test_nothing_imports_the_public_front() -> None:
    """gpuplatform/__init__.py re-exports the API for users; inside the package it would be a cycle."""
    edges = [
        f"{path.relative_to(REPO)}:{line}"
        for path in PACKAGE.rglob("*.py")
        for line, target in imports_of(path)
        if target in {"gpuplatform", "gpuplatform.__init__"}
    ]
    assert edges == []


@pytest.mark.parametrize(
    ("src", "dst", "upward"),
    [
        ("render", "evidence", True),
        ("output", "commands", True),
        ("gates", "render", True),
        ("gates", "plan", True),
        ("plan", "gates", False),
        ("plan", "model", False),
    ],
)
def test_an_upward_import_is_found(src: str, dst: str, upward: bool) -> None:
    assert bool(upward_imports([(src, dst, "x.py:1")])) is upward


def test_a_front_door_imports_upward_only_when_called() -> None:
    """The verbs import the commands inside each method (when called) and the reports' types
    under TYPE_CHECKING: importing the model never loads a layer above it."""
    for door, allowed in FRONT_DOORS.items():
        module_level = [
            node.module
            for node in ast.parse((REPO / door).read_text()).body
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("gpuplatform.")
        ]
        assert [m for m in module_level if m.split(".")[1] in allowed] == [], door
    assert upward_imports([("model", "commands", "gpuplatform/model/verbs.py:40")]) == []
    assert upward_imports([("model", "commands", "gpuplatform/model/platform.py:40")]) != []


def test_only_an_import_for_type_checkers_is_a_type_only_import() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "from gpuplatform.plan.steps import Step\n"
        "if TYPE_CHECKING:\n"
        "    from gpuplatform.plan.waves import Plan\n"
        "def f():\n"
        "    from gpuplatform.plan.waves import WaveState\n"
    )
    assert type_only_lines(source) == {4}


def test_imports_are_found_everywhere_and_resolved() -> None:
    source = (
        "import gpuplatform.cel\n"
        "from . import meta\n"
        "from ..plan.waves import Plan\n"
        "from gpuplatform import evidence\n"
        "def f():\n"
        "    from gpuplatform.capacity import run\n"
    )
    assert imported_modules(source, "gpuplatform.render.tree") == [
        (1, "gpuplatform.cel"),
        (2, "gpuplatform.render"),
        (3, "gpuplatform.plan.waves"),
        (4, "gpuplatform.evidence"),
        (6, "gpuplatform.capacity"),
    ]
    assert imported_modules("from . import x\n", "gpuplatform.render", is_package=True) == [
        (1, "gpuplatform.render")
    ]


def test_the_architecture_page_draws_these_layers() -> None:
    """docs/architecture.md has one line per package, in this order, under its layer."""
    text = (REPO / "docs" / "architecture.md").read_text()
    drawn = [line.split()[0].rstrip("/").removesuffix(".py") for line in _diagram(text)]
    assert drawn == list(ORDER)


def _diagram(text: str) -> list[str]:
    """The package lines of the first fenced block: `  name/   what it is` under a layer heading."""
    block = text.split("```")[1].splitlines()[1:]
    return [line.strip() for line in block if line.startswith("  ") and line.strip()]
