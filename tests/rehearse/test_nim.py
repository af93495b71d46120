"""The NIM Operator as the rehearsal emulates it (`rehearse/nim.py`), held to the operator's source
at v3.1.2 and to the product's own model of what the operator creates (`render/nim_cel.py`)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuplatform.load.stacks import load_stack
from gpuplatform.plan.waves import Plan, plan_platform
from gpuplatform.rehearse.assets import Assets
from gpuplatform.rehearse.nim import NimOwners, _hash12, _objects, _rolled_out
from gpuplatform.render.nim_cel import operator_selectors
from tests.conftest import REPO
from tests.rehearse.conftest import rehearse_tree

NIM_LAB = REPO / "stacks" / "nim-lab.yaml"


@pytest.fixture(scope="module")
def nim_lab() -> Plan:
    [loaded] = load_stack(NIM_LAB)
    return plan_platform(loaded.platform)


def _converted() -> dict[str, Any]:
    """The inference team's converted NIMService, as the runbook applies it."""
    path = REPO / "dist" / "nim-lab" / "handoff" / "05-nim" / "nimservice_inference_llama3-8b-dra.yaml"
    doc: dict[str, Any] = yaml.safe_load(path.read_text())
    doc["metadata"]["uid"] = "0b5c3e9e-0000-4000-8000-000000000001"
    return doc


def test_names_are_hashed_as_the_operator_hashes_them() -> None:
    """`utils.GetTruncatedStringHash`: FNV-32a in decimal through apimachinery's
    `rand.SafeEncodeString`; the values were printed by that Go code (k8s.io/apimachinery v0.36.3)."""
    assert _hash12("llama3-8b-dra") == "5d896798fb"
    assert _hash12("embedder-dra") == "785dc54f69"
    assert _hash12("claimtemplate-x-0") == "687db4b49"


def test_a_claim_creation_spec_becomes_the_template_the_product_expects(nim_lab: Plan) -> None:
    """The operator's template selects what `operator_selectors` (the product's model of it, which
    the admission policy allows) says, and the pod claims it through a claim in every container."""
    [nim] = [n for n in nim_lab.platform.nim_services if n.name == "llama3-8b-dra"]
    objects = {o["kind"]: o for o in _objects(_converted())}
    template = objects["ResourceClaimTemplate"]
    assert template["metadata"]["name"] == f"claimtemplate-{_hash12('llama3-8b-dra')}-0"
    [request] = template["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"]["deviceClassName"] == "hopper-80g.lab.example.com"
    assert [s["cel"]["expression"] for s in request["exactly"]["selectors"]] == operator_selectors(nim)
    pod = objects["Deployment"]["spec"]["template"]["spec"]
    [claim] = pod["resourceClaims"]
    assert claim["resourceClaimTemplateName"] == template["metadata"]["name"]
    assert pod["containers"][0]["resources"]["claims"] == [{"name": claim["name"]}]
    assert objects["Deployment"]["spec"]["template"]["metadata"]["labels"]["app"] == "llama3-8b-dra"
    owner = objects["Deployment"]["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["controller"]) == ("NIMService", True)


def test_ready_is_a_finished_rollout() -> None:
    """`isDeploymentReady`: every replica updated and available; a rollout still going is not."""

    def deployment(generation: int, updated: int, available: int) -> dict[str, Any]:
        status = {
            "observedGeneration": generation,
            "updatedReplicas": updated,
            "availableReplicas": available,
        }
        return {"metadata": {"name": "llm", "generation": 2}, "spec": {"replicas": 2}, "status": status}

    assert _rolled_out(deployment(2, 2, 2))[0]
    assert not _rolled_out(deployment(2, 2, 1))[0]  # one updated pod not available yet
    assert not _rolled_out(deployment(1, 2, 2))[0]  # the controller has not seen the new spec
    assert not _rolled_out(None)[0]


def test_the_replaced_service_runs_until_the_wave_after_its_move(nim_lab: Plan) -> None:
    """What must keep running follows the capacity plan: the old service up to the wave of the
    move (the next wave's runbook retires it), the new one from it on."""
    owners = NimOwners(cluster=None, plan=nim_lab, tree=None)  # type: ignore[arg-type]
    waves = {w.name: w for w in nim_lab.waves}
    running = {name: {d.name for d in owners.declared(w)} for name, w in waves.items()}
    assert running["application"] == {"llama3-8b", "embedder"}
    assert running["nim"] == {"llama3-8b", "embedder", "llama3-8b-dra", "embedder-dra"}
    assert running["drain"] == {"llama3-8b-dra", "embedder-dra"}
    assert owners.moving(waves["nim"], waves["drain"]) == {"inference/llama3-8b", "inference/embedder"}
    assert owners.moving(waves["drain"], waves["nim"]) == {"inference/llama3-8b", "inference/embedder"}
    assert owners.moving(waves["drain"], waves["cutover"]) == set()


def test_the_nim_services_move_blue_green_on_the_emulated_operator(
    assets_136: Assets, crds: Path | None
) -> None:
    """nim-lab's NIM wave as its runbook says: the owners' NIMCaches, the converted manifest applied,
    the template-mode service made from the one it replaces, each Ready on DRA nodes."""
    report = rehearse_tree(NIM_LAB, REPO / "dist" / "nim-lab", "application", "nim", assets_136, crds)
    assert [(r.source, r.target, r.violation) for r in report.results] == [("application", "nim", None)]


def test_a_converted_nim_service_without_the_dra_toleration_never_gets_ready(
    assets_136: Assets, crds: Path | None, tmp_path: Path
) -> None:
    """The hand-off's toleration cut from the converted manifest in the tree: the new service's pod
    stays Pending beside the tainted DRA node, and the runbook's wait for Ready does not end."""
    tree = tmp_path / "nim-lab"
    shutil.copytree(REPO / "dist" / "nim-lab", tree)
    converted = tree / "handoff" / "05-nim" / "nimservice_inference_llama3-8b-dra.yaml"
    doc = yaml.safe_load(converted.read_text())
    assert doc["spec"].pop("tolerations")
    converted.write_text(yaml.safe_dump(doc))
    report = rehearse_tree(NIM_LAB, tree, "application", "nim", assets_136, crds)
    [violation] = [r.violation for r in report.results if r.violation is not None]
    assert violation.invariant == "runbook"
    assert "nimservice/llama3-8b-dra" in violation.message
