"""The public API: every re-exported name resolves, and the package root stays cheap to import."""

from __future__ import annotations

import subprocess
import sys

import gpuplatform


def test_every_exported_name_resolves() -> None:
    for name in gpuplatform.__all__:
        assert getattr(gpuplatform, name) is not None, name


def test_importing_the_package_loads_only_the_model() -> None:
    code = "import sys, gpuplatform; print(sorted({m.split('.')[1] for m in sys.modules if m.startswith('gpuplatform.')}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['model', 'versions']"
