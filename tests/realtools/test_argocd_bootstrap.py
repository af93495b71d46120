"""`gpuplatform argocd-entry`: the root Application builds into the entry of the active wave with the
real kustomize, names no wave itself, and after it a merged wave is all a wave takes."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from click.testing import CliRunner

from gpuplatform.cli import main
from tests.conftest import REPO, SHARED

APPLICATION_CRD = SHARED / "reference" / "crds" / "application-crd.yaml"


def _docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


def _build(kubectl: str, folder: Path) -> list[dict[str, Any]]:
    out = subprocess.run([kubectl, "kustomize", str(folder)], capture_output=True, text=True, check=True)
    return _docs(out.stdout)


def _stack(tmp_path: Path, wave: str | None = None) -> Path:
    """The reference stack (and its staging overlay) in a repository-like folder, its active wave
    set to `wave`."""
    if not (tmp_path / "stacks").exists():
        shutil.copytree(REPO / "stacks", tmp_path / "stacks")
        shutil.copytree(REPO / "overlays", tmp_path / "overlays")
    stack = tmp_path / "stacks" / "reference.py"
    if wave is not None:
        text = stack.read_text()
        stack.write_text(re.sub(r'active_wave="[a-z0-9-]+"', f'active_wave="{wave}"', text, count=1))
    return stack


def test_the_root_application_syncs_the_entry_of_whichever_wave_is_merged(
    tmp_path: Path, kubectl: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the reference stack rendered in a repository, and its root Application
    monkeypatch.chdir(tmp_path)
    run = CliRunner().invoke
    stack = _stack(tmp_path)
    assert 'active_wave="' in stack.read_text()
    assert run(main, ["synth", "stacks/reference.py", "--out", "dist"]).exit_code == 0
    first = run(main, ["argocd-entry", "stacks/reference.py", "--platform", "reference"])
    assert first.exit_code == 0, first.stderr
    [root] = _docs(first.stdout)

    # THEN it is a valid Application of the upstream CRD, in Argo CD's namespace on its own cluster
    crd = yaml.safe_load(APPLICATION_CRD.read_text())
    jsonschema.validate(root, crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    assert root["metadata"] == {
        "name": "reference-root",
        "namespace": "argocd",
        "labels": {"app.kubernetes.io/managed-by": "gpuplatform"},
    }
    assert root["spec"]["destination"] == {"server": "https://kubernetes.default.svc", "namespace": "argocd"}
    assert root["spec"]["project"] == "default"
    assert root["spec"]["syncPolicy"]["automated"] == {"prune": True, "selfHeal": True}
    assert "finalizers" not in root["metadata"], "deleting the root must orphan, never uninstall"

    # AND what it syncs (the real kustomize) is the AppProject and the entry Applications of the
    # active wave
    def wave_path() -> str:
        built = _build(kubectl, tmp_path / root["spec"]["source"]["path"])
        kinds = sorted((d["kind"], d["metadata"]["name"]) for d in built)
        assert kinds == [
            ("AppProject", "reference"),
            ("Application", "reference"),
            ("Application", "reference-gates"),
            ("Application", "reference-sync"),
        ]
        for app in [d for d in built if d["kind"] == "Application"]:
            assert _build(kubectl, tmp_path / app["spec"]["source"]["path"]), app["metadata"]["name"]
        [wave_app] = [d for d in built if (d["kind"], d["metadata"]["name"]) == ("Application", "reference")]
        path: str = wave_app["spec"]["source"]["path"]
        return path

    assert wave_path() == "dist/reference/waves/03-native-claim-pilot/argocd"

    # WHEN a wave pull request is merged (activeWave changed, synth)
    _stack(tmp_path, "compatibility-bridge")
    assert run(main, ["synth", "stacks/reference.py", "--out", "dist"]).exit_code == 0
    again = run(main, ["argocd-entry", "stacks/reference.py", "--platform", "reference"])

    # THEN the root did not change, and what it syncs names the new wave
    assert again.stdout == first.stdout
    assert wave_path() == "dist/reference/waves/04-compatibility-bridge/argocd"


def test_the_applicationset_root_syncs_the_stack_s_applicationsets(
    tmp_path: Path, kubectl: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _stack(tmp_path)
    run = CliRunner().invoke
    assert run(main, ["synth", "stacks/reference.py", "--out", "dist"]).exit_code == 0
    result = run(main, ["argocd-entry", "stacks/reference.py", "--applicationset"])
    assert result.exit_code == 0, result.stderr
    [root] = _docs(result.stdout)
    assert root["metadata"]["name"] == "reference-applicationsets-root"
    built = _build(kubectl, tmp_path / root["spec"]["source"]["path"])
    assert sorted((d["kind"], d["metadata"]["name"]) for d in built) == [
        ("AppProject", "reference"),
        ("AppProject", "reference-staging"),
        ("ApplicationSet", "reference"),
        ("ApplicationSet", "reference-apps"),
    ]
