"""Kueue in the rehearsal: the release's own install with the rehearsal's ports, the team's queues
before the first wave, what Kueue has yet to decide, and the real manager admitting the Jobs of a
stack that queues them (its Configuration hand-off and restart are the runbook's, as rendered)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuplatform.kueue.model import QUEUE_LABEL
from gpuplatform.rehearse.assets import Assets
from gpuplatform.rehearse.kueue import (
    KUEUE_CONFIG_KEY,
    KUEUE_CONFIGMAP,
    KueueRelease,
    kueue_install,
    kueue_undecided,
    team_queues,
)
from gpuplatform.rehearse.run import read_tree
from tests.conftest import REPO
from tests.rehearse.conftest import rehearse_tree

KUEUE_FLEET = REPO / "stacks" / "kueue-fleet.yaml"
PORTS = [21001, 21002, 21003, 21004]


@pytest.fixture(scope="module")
def release(kueue_release: KueueRelease) -> KueueRelease:
    return kueue_release


def _of(objects: list[dict[str, Any]], kind: str, name: str = "") -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind and (not name or o["metadata"]["name"] == name)]


def test_the_install_moves_every_port_of_the_manager_together(release: KueueRelease) -> None:
    objects = kueue_install(release, "kueue-system", PORTS)
    [config_map] = _of(objects, "ConfigMap", KUEUE_CONFIGMAP)
    config = yaml.safe_load(config_map["data"][KUEUE_CONFIG_KEY])
    assert config["health"]["healthProbeBindAddress"] == ":21001"
    assert config["metrics"]["bindAddress"] == ":21002"
    assert config["webhook"]["port"] == 21003
    assert config["visibilityServer"]["bindPort"] == 21004
    assert config["featureGates"]["VisibilityOnDemand"] is False
    [deployment] = _of(objects, "Deployment")
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == release.image
    assert {p["containerPort"] for p in container["ports"]} <= set(PORTS)
    assert container["readinessProbe"]["httpGet"]["port"] == 21001
    targets = {s["metadata"]["name"]: s["spec"]["ports"][0]["targetPort"] for s in _of(objects, "Service")}
    assert targets["kueue-webhook-service"] == 21003
    assert set(targets.values()) <= set(PORTS)
    assert not _of(objects, "APIService")


def test_the_install_lands_in_the_spec_namespace(release: KueueRelease) -> None:
    objects = kueue_install(release, "queues", PORTS)
    text = yaml.safe_dump_all(objects)
    assert "kueue-system" not in text
    [hooks] = _of(objects, "MutatingWebhookConfiguration")
    assert {h["clientConfig"]["service"]["namespace"] for h in hooks["webhooks"]} == {"queues"}
    converted = [
        c for c in _of(objects, "CustomResourceDefinition") if c["spec"].get("conversion", {}).get("webhook")
    ]
    assert converted
    assert {
        c["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["namespace"] for c in converted
    } == {"queues"}
    assert _of(objects, "Namespace", "queues")


def test_the_team_queues_are_the_first_wave_s_without_the_mode_label() -> None:
    tree = read_tree(REPO / "dist" / "kueue-fleet", "kueue-fleet")
    first = [
        o
        for path, c in tree.files.items()
        if isinstance(c, list) and path.startswith("waves/00-base/")
        for o in c
    ]
    queues = team_queues(first)
    assert [o["kind"] for o in queues] == [
        "Namespace",
        "ResourceFlavor",
        "ResourceFlavor",
        "ResourceFlavor",
        "ClusterQueue",
        "LocalQueue",
    ]
    assert all(set(o["metadata"]) <= {"name", "namespace"} for o in queues)
    assert all("nodeLabels" not in o["spec"] for o in _of(queues, "ResourceFlavor"))
    [rendered] = [o for o in first if o["kind"] == "ClusterQueue"]
    assert _of(queues, "ClusterQueue")[0]["spec"] == rendered["spec"]


class _Objects:
    """A client that lists fixed Jobs and Workloads."""

    def __init__(self, jobs: list[dict[str, Any]], workloads: list[dict[str, Any]]) -> None:
        self.items = {"Job": jobs, "Workload": workloads}

    def list(self, kind: str) -> list[dict[str, Any]]:
        return self.items[kind]


def _job(*, suspend: bool, queued: bool = True, done: bool = False) -> dict[str, Any]:
    conditions = [{"type": "Complete", "status": "True"}] if done else []
    return {
        "metadata": {
            "name": "train",
            "namespace": "training",
            "uid": "u1",
            "labels": {QUEUE_LABEL: "q"} if queued else {},
        },
        "spec": {"suspend": suspend},
        "status": {"conditions": conditions},
    }


def _workload(*conditions: tuple[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"ownerReferences": [{"kind": "Job", "uid": "u1"}]},
        "status": {"conditions": [{"type": t, "status": s} for t, s in conditions]},
    }


@pytest.mark.parametrize(
    ("job", "workloads", "undecided"),
    [
        (_job(suspend=True), [], "has no Workload yet"),
        (_job(suspend=True), [_workload()], "not judged yet"),
        (_job(suspend=True), [_workload(("QuotaReserved", "False"))], ""),
        (
            _job(suspend=True),
            [_workload(("QuotaReserved", "True"), ("Admitted", "True"))],
            "admitted but suspended",
        ),
        (_job(suspend=False), [_workload(("QuotaReserved", "True"), ("Admitted", "True"))], ""),
        (_job(suspend=False), [_workload(("QuotaReserved", "False"))], "running unadmitted"),
        (_job(suspend=False, queued=False), [], ""),
        (_job(suspend=True, done=True), [], ""),
    ],
)
def test_what_kueue_has_yet_to_decide_is_read_from_its_objects(
    job: dict[str, Any], workloads: list[dict[str, Any]], undecided: str
) -> None:
    found = kueue_undecided(_Objects([job], workloads))  # type: ignore[arg-type]
    assert (undecided in found) if undecided else found == ""


def test_the_real_kueue_admits_the_converted_job_after_the_owner_s_restart(
    release: KueueRelease, assets_136: Assets, crds: Path | None
) -> None:
    report = rehearse_tree(
        KUEUE_FLEET, REPO / "dist" / "kueue-fleet", "validate", "apps", assets_136, crds, engine="argocd"
    )
    assert [(r.source, r.target, r.violation) for r in report.results] == [("validate", "apps", None)]


def test_without_the_restart_kueue_never_reads_the_mapping_and_the_rehearsal_fails(
    release: KueueRelease, assets_136: Assets, crds: Path | None, tmp_path: Path
) -> None:
    """The runbook's restart removed from the tree: Kueue keeps the Configuration it started with,
    the converted Job's DeviceClass is not mapped there, and the Job is never admitted."""
    tree = tmp_path / "kueue-fleet"
    shutil.copytree(REPO / "dist" / "kueue-fleet", tree)
    runbook = tree / "runbooks" / "03-apps.md"
    restart = "kubectl -n kueue-system rollout restart deployment/kueue-controller-manager\n"
    text = runbook.read_text()
    assert restart in text
    runbook.write_text(text.replace(restart, "", 1))
    report = rehearse_tree(KUEUE_FLEET, tree, "validate", "apps", assets_136, crds, engine="argocd")
    failed = [r.violation for r in report.results if r.violation is not None]
    assert failed, "the tree without Kueue's restart was proven"
    assert failed[0].invariant == "workload-disrupted"
    assert "training/train" in failed[0].message
