"""The ClusterPolicy health check reaches `argocd-cm` however Argo CD is installed: the argo-cd Helm
chart renders the hand-off's values into it (real helm), and the runbook's jq adds it to an
argocd-operator `ArgoCD` resource that stays valid under the operator's CRD (real jq).

The chart comes from the stored snapshot of argoproj/argo-helm (`fetch`: a chart repository, not on
any registry this project may reach), so that test skips where the snapshot is not; the operator's
CRD comes from the CRD cache (`tests/crd_cache.py`, its Go module at the tag).
"""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from gpuplatform.model import Platform
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.argocd_settings import HEALTH_KEY, argocd_cm_step, cluster_policy_health_lua
from gpuplatform.render.tree import render_tree
from tests.crd_cache import upstream_file

ARGO_HELM = Path("/work/.mirror/argoproj+argo-helm/repo")
ARGO_CD_CHART_TAG = "argo-cd-10.1.1"
OPERATOR_TAG = "v0.18.0"


def _git_show(repo: Path, tag: str, path: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(repo), "show", f"{tag}:{path}"], capture_output=True, text=True, check=True
    ).stdout


def _handoff(reference: Platform, root: Path) -> list[str]:
    """The platform's hand-off files written under `root`, and the runbook step's commands."""
    plan = plan_platform(reference)
    for path, content in render_tree(plan).files.items():
        if path.startswith("handoff/argocd/") and isinstance(content, str):
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(content)
    [step] = argocd_cm_step(plan)
    return [command for part in step.parts for command in part.commands]


def test_the_argo_cd_chart_renders_the_check_into_argocd_cm(
    reference: Platform, tmp_path: Path, helm: Any
) -> None:
    if not ARGO_HELM.is_dir():
        pytest.skip(f"no stored snapshot of argoproj/argo-helm at {ARGO_HELM}")
    # GIVEN the argo-cd chart (its optional redis-ha dependency, off by default, left out as
    # `helm dependency build` would leave it unused) and the hand-off's values
    archive = subprocess.run(
        ["git", "--git-dir", str(ARGO_HELM), "archive", ARGO_CD_CHART_TAG, "charts/argo-cd"],
        capture_output=True,
        check=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(tmp_path)], input=archive, check=True)
    chart = tmp_path / "charts" / "argo-cd"
    meta = yaml.safe_load((chart / "Chart.yaml").read_text())
    assert [d["condition"] for d in meta.pop("dependencies")] == ["redis-ha.enabled"]
    (chart / "Chart.yaml").write_text(yaml.safe_dump(meta))
    _, helm_command, _ = _handoff(reference, tmp_path)
    values = tmp_path / shlex.split(helm_command)[-1]
    # WHEN helm renders the chart with them
    out = subprocess.run(
        [helm.binary, "template", "argocd", str(chart), "-n", "argocd", "-f", str(values)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    # THEN argocd-cm holds the check, byte for byte
    [cm] = [
        d
        for d in yaml.safe_load_all(out)
        if d and d["kind"] == "ConfigMap" and d["metadata"]["name"] == "argocd-cm"
    ]
    assert cm["data"][HEALTH_KEY] == cluster_policy_health_lua()


def _argocd_schema() -> dict[str, Any]:
    crd = upstream_file("argocd-operator", OPERATOR_TAG, "argoproj.io_argocds.yaml")
    [version] = [v for v in crd["spec"]["versions"] if v["name"] == "v1beta1"]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


def test_the_runbook_adds_the_check_to_an_argocd_resource_and_keeps_its_others(
    reference: Platform, tmp_path: Path
) -> None:
    # GIVEN an ArgoCD resource with a check of its own and an older ClusterPolicy check
    schema = _argocd_schema()
    own = {"group": "apps", "kind": "Deployment", "check": "hs = {status = 'Healthy'}\nreturn hs\n"}
    live = {
        "apiVersion": "argoproj.io/v1beta1",
        "kind": "ArgoCD",
        "metadata": {"name": "argocd", "namespace": "argocd", "resourceVersion": "42"},
        "spec": {
            "resourceHealthChecks": [own, {"group": "nvidia.com", "kind": "ClusterPolicy", "check": "old"}]
        },
    }
    jsonschema.validate(live, schema)
    _, _, operator_command = _handoff(reference, tmp_path)
    get, rest = operator_command.split(" | ", 1)
    jq, replace = rest.rsplit(" | ", 1)
    assert get.startswith("kubectl -n argocd get argocd ") and replace == "kubectl replace -f -"
    # WHEN the runbook's jq runs on it (real jq)
    out = subprocess.run(
        ["sh", "-c", jq], input=json.dumps(live), cwd=tmp_path, capture_output=True, text=True, check=True
    ).stdout
    result = json.loads(out)
    # THEN the resource is still valid, keeps its own check and its version, and holds ours once
    jsonschema.validate(result, schema)
    assert result["metadata"]["resourceVersion"] == "42", "kubectl replace refuses it if the resource changed"
    assert result["spec"]["resourceHealthChecks"] == [
        own,
        {"group": "nvidia.com", "kind": "ClusterPolicy", "check": cluster_policy_health_lua()},
    ]
    # AND the operator writes it under Argo CD's key (v0.18.0 controllers/argocd/configmap.go
    # `getResourceHealthChecks`: "resource.customizations.health." + group + "_" + kind)
    [ours] = result["spec"]["resourceHealthChecks"][1:]
    assert f"resource.customizations.health.{ours['group']}_{ours['kind']}" == HEALTH_KEY
    # AND running it twice changes nothing
    again = subprocess.run(
        ["sh", "-c", jq], input=out, cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert json.loads(again.stdout) == result
