"""NIM services: draResources in each shape, tool-owned templates, hand-offs, and the NIM Operator's rules."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gpuplatform.load.stacks import load_stack
from gpuplatform.model import NimService
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.nim import dra_resources, render_nim_handoffs, render_nim_owned
from gpuplatform.render.workload_handoff import render_workload_handoffs, render_workload_templates
from tests.conftest import REPO


@pytest.fixture(scope="module")
def lab():  # type: ignore[no-untyped-def]
    return plan_platform(load_stack(REPO / "stacks" / "nim-lab.yaml")[0].platform)


def test_claim_creation_spec_from_attribute_and_capacity_selectors(lab) -> None:  # type: ignore[no-untyped-def]
    nim = next(n for n in lab.platform.nim_services if n.name == "llama3-8b-dra")
    assert dra_resources(lab, nim) == [
        {
            "claimCreationSpec": {
                "devices": [
                    {
                        "name": "gpu",
                        "count": 1,
                        "deviceClassName": "hopper-80g.lab.example.com",
                        "driverName": "gpu.nvidia.com",
                        "attributeSelectors": [
                            {"key": "architecture", "op": "Equal", "value": {"stringValue": "Hopper"}}
                        ],
                        "capacitySelectors": [{"key": "memory", "op": "GreaterThanOrEqual", "value": "79Gi"}],
                    }
                ]
            }
        }
    ]


def test_template_mode_renders_a_tool_owned_template_in_the_nim_namespace(lab) -> None:  # type: ignore[no-untyped-def]
    owned = render_nim_owned(lab, lab.wave("nim"))
    assert [(o["kind"], o["metadata"]["namespace"], o["metadata"]["name"]) for o in owned] == [
        ("ResourceClaimTemplate", "inference", "embedder-dra-gpu")
    ]
    assert render_nim_owned(lab, lab.wave("claims")) == []


def test_handoff_is_blue_green_from_the_nim_wave_on(lab) -> None:  # type: ignore[no-untyped-def]
    assert render_nim_handoffs(lab, lab.wave("claims")) == []
    handoff = {h["metadata"]["name"]: h for h in render_nim_handoffs(lab, lab.wave("nim"))}
    assert handoff["embedder-dra"]["spec"]["replaces"] == "embedder"
    assert handoff["embedder-dra"]["spec"]["draResources"] == [
        {"resourceClaimTemplateName": "embedder-dra-gpu"}
    ]
    assert handoff["embedder-dra"]["spec"]["removeResourceLimits"] == ["nvidia.com/gpu"]


def test_workloads_convert_only_from_their_wave(lab) -> None:  # type: ignore[no-untyped-def]
    assert render_workload_templates(lab, lab.wave("claims")) == []
    [template] = render_workload_templates(lab, lab.wave("application"))
    assert template["metadata"]["name"] == "trainer-gpu"
    assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 4
    [handoff] = render_workload_handoffs(lab, lab.wave("application"))
    assert handoff["spec"]["target"] == {"kind": "Deployment", "namespace": "training", "name": "trainer"}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"celExpressions": ["true"], "attributeSelectors": [{"key": "a", "value": "b"}]},
            "cannot be combined",
        ),
        ({"mode": "claim", "replicas": 2, "tier": "t"}, "more than one replica"),
        (
            {"attributeSelectors": [{"key": "driverVersion", "value": "580", "valueType": "version"}]},
            "not a semantic version",
        ),
        (
            {
                "attributeSelectors": [{"key": "memory", "value": "x"}],
                "capacitySelectors": [{"key": "gpu.nvidia.com/memory", "value": "1Gi"}],
            },
            "repeat",
        ),
        ({"mode": "template"}, "set tier"),
    ],
)
def test_nim_operator_rules(fields: dict, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(ValidationError, match=message):
        NimService.model_validate({"name": "n", "namespace": "ns", "movesIn": "w", **fields})


def test_named_manifests_are_handed_off_converted_from_their_wave_on() -> None:
    import yaml

    from gpuplatform.commands.synth import render_all

    [loaded] = load_stack(REPO / "stacks" / "nim-lab.yaml")
    files = render_all([loaded])["nim-lab"]
    assert "handoff/03-claims/trainer.yaml" not in files
    converted = yaml.safe_load(files["handoff/04-application/trainer.yaml"].decode())
    assert "# The training team's Deployment" in files["handoff/04-application/trainer.yaml"].decode()
    pod = converted["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"] == {"limits": {"memory": "64Gi"}, "claims": [{"name": "gpu"}]}
    assert pod["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": "trainer-gpu"}]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]


def test_a_missing_manifest_is_located(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from gpuplatform.errors import InputError

    text = (
        (REPO / "stacks" / "nim-lab.yaml")
        .read_text()
        .replace("manifests/trainer.yaml", "manifests/nope.yaml")
    )
    (tmp_path / "lab.yaml").write_text(text)
    with pytest.raises(InputError, match=r"spec\.workloads\[0\]\.manifest: .*nope\.yaml: no such file"):
        load_stack(tmp_path / "lab.yaml")


def test_named_nimservice_manifest_is_handed_off_as_its_blue_green_successor() -> None:
    import jsonschema
    import yaml

    from gpuplatform.commands.synth import render_all
    from tests.conftest import SHARED

    [loaded] = load_stack(REPO / "stacks" / "nim-lab.yaml")
    files = render_all([loaded])["nim-lab"]
    text = files["handoff/05-nim/nimservice_inference_llama3-8b-dra.yaml"].decode()
    assert text.startswith("# The inference team's NIMService")
    doc = yaml.safe_load(text)
    assert doc["metadata"]["name"] == "llama3-8b-dra"
    assert "resources" not in doc["spec"]
    # blue and green never share a cache: the legacy llama3-8b runs on A100, the new one on H100
    assert doc["spec"]["storage"]["nimCache"]["name"] == "llama3-8b-dra"
    assert (
        doc["spec"]["draResources"][0]["claimCreationSpec"]["devices"][0]["deviceClassName"]
        == "hopper-80g.lab.example.com"
    )
    # the operator gives the pods `spec.tolerations`: without the DRA pools' taint tolerated they
    # stay Pending beside every DRA node (the rehearsal found it: `kubectl wait ... Ready` timed out)
    assert doc["spec"]["tolerations"] == [
        {
            "key": "gpu-scheduling.lab.example.com/mode",
            "operator": "Equal",
            "value": "dra",
            "effect": "NoSchedule",
        }
    ]
    handoff = yaml.safe_load(files["handoff/05-nim/nimservicehandoff_inference_embedder-dra.yaml"])
    assert handoff["spec"]["tolerations"] == doc["spec"]["tolerations"]
    crd_file = SHARED / "reference" / "crds" / "apps.nvidia.com_nimservices.yaml"
    if not crd_file.is_file():
        pytest.skip(f"NIM Operator CRD not found at {crd_file}")
    crd = yaml.safe_load(crd_file.read_text())
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    jsonschema.Draft202012Validator(schema).validate(doc)
