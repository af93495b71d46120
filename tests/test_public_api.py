"""The public API: every re-exported name resolves, the package root stays cheap to import, and a
path may be given as text."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import gpuplatform
from tests.conftest import REPO
from tests.specs import minimal_spec, write_spec


def test_every_exported_name_resolves() -> None:
    for name in gpuplatform.__all__:
        assert getattr(gpuplatform, name) is not None, name


def test_importing_the_package_loads_only_the_model() -> None:
    code = "import sys, gpuplatform; print(sorted(m for m in sys.modules if m.startswith('gpuplatform.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    modules = ast.literal_eval(out.stdout)
    loaded = {m.split(".")[1] for m in modules}
    assert sorted(loaded) == ["kueue", "labels", "model", "versions"]  # the model and the facts it reads
    # of the Kueue concept, only its part of the model (`kueue/model.py`)
    assert sorted(m for m in modules if m.startswith("gpuplatform.kueue")) == [
        "gpuplatform.kueue",
        "gpuplatform.kueue.model",
    ]


def test_the_typed_and_the_lazy_exports_are_one_list() -> None:
    """What type checkers import (`if TYPE_CHECKING:`) is what `__getattr__` imports on first use."""
    from gpuplatform.model import __all__ as models

    tree = ast.parse((REPO / "gpuplatform" / "__init__.py").read_text())
    typed = {
        (node.module, alias.name)
        for block in tree.body
        if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING"
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert typed == {(module, name) for name, module in gpuplatform._LAZY.items()}
    assert sorted(gpuplatform.__all__) == sorted({*models, *gpuplatform._LAZY, "__version__"})


def test_the_verbs_that_take_a_folder_take_it_as_text(tmp_path: Path) -> None:
    """From Python, a folder is often a string: `check_tree(loaded, "dist")` raised AttributeError."""
    spec = write_spec(tmp_path / "lab.yaml", minimal_spec())
    loaded = gpuplatform.load_stack(str(spec))
    out = tmp_path / "dist"
    written, _ = gpuplatform.synth_tree(loaded, str(out))
    assert written == [loaded[0].platform.name]
    assert gpuplatform.check_tree(loaded, str(out)) == []
