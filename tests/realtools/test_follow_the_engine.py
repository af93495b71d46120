"""The runbook's "follow the engine" step ends only once the engine has applied the merge commit:
never on the previous wave's Ready (Flux) or Synced (Argo CD) status. The commands run as written,
with the real git and the real kubectl's JSONPath, against the engines' objects as files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuplatform.commands.synth import render_files
from gpuplatform.load.stacks import load_stack
from tests.conftest import REPO

OLD = "0123456789abcdef0123456789abcdef01234567"
TARGET = "dist/reference/waves/02-driver-validation/argocd"
PREVIOUS = "dist/reference/waves/03-native-claim-pilot/argocd"


def _follow_commands() -> list[str]:
    """The rollback 03 -> 02's follow step of the reference runbook, as rendered."""
    files = render_files(load_stack(REPO / "stacks" / "reference.py")[0])
    book = files["runbooks/03-native-claim-pilot.md"].decode()
    step = book.split("## Rollback to 02-driver-validation", 1)[1].split("Follow the engine", 1)[1]
    block = step.split("```sh\n", 1)[1].split("```", 1)[0]
    return [line.strip() for line in block.splitlines() if line.strip()]


def _write(state: Path, name: str, obj: dict[str, Any]) -> None:
    (state / name).write_text(yaml.safe_dump(obj))


def _engines(state: Path, revision: str, path: str) -> None:
    """Argo CD's wave Application and Flux's last Kustomization, as left by a sync of `revision`."""
    _write(
        state,
        "application_reference.yaml",
        {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "Application",
            "metadata": {"name": "reference", "namespace": "argocd"},
            "status": {
                "sync": {"status": "Synced", "revision": revision},
                "operationState": {
                    "phase": "Succeeded",
                    "syncResult": {"revision": revision, "source": {"path": path}},
                },
            },
        },
    )
    _write(
        state,
        "kustomization_reference-gates-post.yaml",
        {
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
            "kind": "Kustomization",
            "metadata": {"name": "reference-gates-post", "namespace": "flux-system"},
            "status": {
                "lastAppliedRevision": f"main@sha1:{revision}",
                "conditions": [{"type": "Ready", "status": "True", "reason": "ReconciliationSucceeded"}],
            },
        },
    )


@pytest.fixture
def world(tmp_path: Path, kubectl: str) -> tuple[Path, dict[str, str], str]:
    """A clone whose origin's `main` holds the merge commit; kubectl answering from `state/`; a flux
    that only reconciles."""
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    origin, clone, state, bin_ = (tmp_path / n for n in ("origin", "clone", "state", "bin"))
    for folder in (origin, state, bin_):
        folder.mkdir()
    subprocess.run([*git, "init", "-q", "-b", "main", str(origin)], check=True)
    subprocess.run([*git, "-C", str(origin), "commit", "-q", "--allow-empty", "-m", "merge wave"], check=True)
    merged = subprocess.run(
        ["git", "-C", str(origin), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    subprocess.run(["git", "clone", "-q", str(origin), str(clone)], check=True)
    shim = Path(__file__).with_name("state_kubectl.py")
    (bin_ / "kubectl").write_text(f'#!/bin/sh\nexec "{sys.executable}" "{shim}" "$@"\n')
    (bin_ / "flux").write_text("#!/bin/sh\nexit 0\n")
    for tool in bin_.iterdir():
        tool.chmod(0o755)
    _write(
        state,
        "gitrepository_flux-system.yaml",
        {
            "apiVersion": "source.toolkit.fluxcd.io/v1",
            "kind": "GitRepository",
            "metadata": {"name": "flux-system", "namespace": "flux-system"},
            "spec": {"ref": {"branch": "main"}},
        },
    )
    env = {**os.environ, "PATH": f"{bin_}:{os.environ['PATH']}", "STATE": str(state), "REAL_KUBECTL": kubectl}
    return clone, env, merged


def _run(commands: list[str], clone: Path, env: dict[str, str]) -> str:
    """'done', 'failed' or 'waiting' (still looping after a few seconds)."""
    try:
        result = subprocess.run(
            ["sh", "-ec", "\n".join(commands)], cwd=clone, env=env, capture_output=True, text=True, timeout=5
        )
    except subprocess.TimeoutExpired:
        return "waiting"
    return "done" if result.returncode == 0 else "failed"


def test_following_waits_for_the_merge_commit_under_each_engine(
    world: tuple[Path, dict[str, str], str],
) -> None:
    clone, env, merged = world
    state = Path(env["STATE"])
    commands = _follow_commands()
    flux_only = ("flux ", "BRANCH=", "kubectl -n flux-system")
    argo = [c for c in commands if not c.startswith(flux_only)]
    flux = [c for c in commands if "application" not in c]

    # GIVEN each engine still shows the previous wave, synced and Ready at the previous commit
    _engines(state, OLD, PREVIOUS)
    # THEN following does not end on it
    assert _run(argo, clone, env) == "waiting"
    assert _run(flux, clone, env) == "failed"

    # GIVEN Argo CD compared the merge commit, but its last sync is still the previous wave's
    _engines(state, merged, PREVIOUS)
    assert _run(argo, clone, env) == "waiting"

    # WHEN each engine has applied the merge commit (Argo CD: the target wave's folder)
    _engines(state, merged, TARGET)
    # THEN following ends
    assert _run(argo, clone, env) == "done"
    assert _run(flux, clone, env) == "done"
