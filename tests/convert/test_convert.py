"""Legacy manifests -> claims, over a corpus of realistic manifests (some from public charts' output)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from gpuplatform.cli import main
from gpuplatform.convert.files import convert_files
from gpuplatform.convert.manifests import Conversion, convert_text
from gpuplatform.convert.targets import Placement, Targets, resolve_targets
from gpuplatform.errors import InputError
from gpuplatform.model import Platform
from tests.admission.lab import lab_spec
from tests.specs import write_spec

TIER = "nvidia-hopper-large-memory.platform.example.com"
TARGETS = Targets(Placement(TIER))
ERT = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}

# Rendered by hand from the shape of the public NVIDIA Triton Inference Server Helm chart's
# Deployment (deploy/k8s-onprem), trimmed: probes and env kept as they ship.
TRITON = """\
---
# Source: triton-inference-server/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: example-triton-inference-server
  namespace: inference
  labels:
    app: triton-inference-server
    chart: triton-inference-server-1.0.0
    release: example
spec:
  replicas: 1
  selector:
    matchLabels:
      app: triton-inference-server
      release: example
  template:
    metadata:
      labels:
        app: triton-inference-server
        release: example
    spec:
      containers:
        - name: triton-inference-server
          image: "nvcr.io/nvidia/tritonserver:24.05-py3"
          imagePullPolicy: IfNotPresent
          resources:
            limits:
              nvidia.com/gpu: 1
          args: ["tritonserver", "--model-store=gs://triton-inference-server-repository/model_repository"]
          ports:
            - containerPort: 8000
              name: http
          livenessProbe:
            httpGet:
              path: /v2/health/live
              port: http
---
# Source: triton-inference-server/templates/service.yaml
apiVersion: v1
kind: Service
metadata:
  name: example-triton-inference-server
  namespace: inference
spec:
  type: ClusterIP
  ports:
    - port: 8000
      targetPort: http
      name: http-inference-server
  selector:
    app: triton-inference-server
    release: example
"""

# The shape of a rendered vLLM production-stack StatefulSet: GPU in requests and limits,
# an init container that downloads weights without a GPU.
VLLM = """\
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: vllm-llama3
  namespace: llm
spec:
  serviceName: vllm
  selector:
    matchLabels: {model: llama3}
  template:
    metadata:
      labels: {model: llama3}
    spec:
      initContainers:
      - name: fetch
        image: busybox:1.36
        command: ["sh", "-c", "true"]
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.6.3
        resources:
          requests:
            nvidia.com/gpu: "2"
            cpu: "8"
          limits:
            nvidia.com/gpu: "2"
"""

CRONJOB = """\
apiVersion: batch/v1
kind: CronJob
metadata:
  name: nightly-finetune
  namespace: ml
spec:
  schedule: "0 2 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - name: train
            image: trainer:1
            resources: {limits: {nvidia.com/gpu: 4}}
          - name: eval
            image: eval:1
            resources: {limits: {nvidia.com/gpu: 1}}
"""


def _convert(text: str, targets: Targets = TARGETS, **options: bool) -> Conversion:
    return convert_text(text, "in.yaml", targets, **options)


def _pod(result: Conversion, index: int = 0) -> dict:  # type: ignore[type-arg]
    doc = list(yaml.safe_load_all(result.text))[index]
    node = doc
    for part in {"Pod": ("spec",), "CronJob": ("spec", "jobTemplate", "spec", "template", "spec")}.get(
        doc["kind"], ("spec", "template", "spec")
    ):
        node = node[part]
    return node  # type: ignore[no-any-return]


def _requests(result: Conversion) -> list[tuple[str, str, int]]:
    [template] = result.templates
    return [
        (r["name"], r["exactly"]["deviceClassName"], r["exactly"]["count"])
        for r in template["spec"]["spec"]["devices"]["requests"]
    ]


def test_triton_deployment_converts_and_keeps_everything_else() -> None:
    result = _convert(TRITON)
    assert result.converted == ["Deployment/example-triton-inference-server"]
    assert "# Source: triton-inference-server/templates/deployment.yaml" in result.text
    assert "# Source: triton-inference-server/templates/service.yaml" in result.text
    docs = list(yaml.safe_load_all(result.text))
    pod = docs[0]["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert "nvidia.com/gpu" not in str(container["resources"])
    assert container["resources"]["claims"] == [{"name": "gpu"}]
    assert container["livenessProbe"] == {"httpGet": {"path": "/v2/health/live", "port": "http"}}
    assert pod["resourceClaims"] == [
        {"name": "gpu", "resourceClaimTemplateName": "example-triton-inference-server-gpu"}
    ]
    # the toleration ExtendedResourceToleration used to add for nvidia.com/gpu is kept
    assert pod["tolerations"] == [ERT]
    assert docs[1] == yaml.safe_load(TRITON.split("---\n")[2])
    [template] = result.templates
    assert template["metadata"]["name"] == "example-triton-inference-server-gpu"
    assert _requests(result) == [("gpu", TIER, 1)]


def test_statefulset_with_requests_and_limits_keeps_cpu_and_the_init_container() -> None:
    result = _convert(VLLM)
    pod = _pod(result)
    assert pod["containers"][0]["resources"] == {"requests": {"cpu": "8"}, "claims": [{"name": "gpu"}]}
    assert "resources" not in pod["initContainers"][0]
    assert _requests(result) == [("gpu", TIER, 2)]


def test_every_container_keeps_its_own_gpus_by_default() -> None:
    # GIVEN train (4 GPUs) and eval (1 GPU): the device plugin gave them 5 distinct GPUs
    result = _convert(CRONJOB)
    pod = _pod(result)
    # THEN one claim, one request per container, each container naming its own
    assert _requests(result) == [("train", TIER, 4), ("eval", TIER, 1)]
    assert [c["resources"]["claims"] for c in pod["containers"]] == [
        [{"name": "gpu", "request": "train"}],
        [{"name": "gpu", "request": "eval"}],
    ]
    assert not [n for n in result.notes if n.severity == "warning" and "share" in n.message]


ANCHORED = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: pair, namespace: inference}
spec:
  selector: {matchLabels: {app: pair}}
  template:
    metadata: {labels: {app: pair}}
    spec:
      containers:
        - name: left
          image: busybox
          resources: &gpu
            limits:
              nvidia.com/gpu: 1
        - name: right
          image: busybox
          resources: *gpu
"""


def test_containers_that_share_an_anchor_each_keep_their_own_devices() -> None:
    # GIVEN two containers whose resources are one YAML anchor (issue 39: both got the first's request)
    result = _convert(ANCHORED)
    pod = _pod(result)
    # THEN each container asks for its own device, as the device plugin gave each its own GPU
    assert _requests(result) == [("left", TIER, 1), ("right", TIER, 1)]
    assert [c["resources"]["claims"] for c in pod["containers"]] == [
        [{"name": "gpu", "request": "left"}],
        [{"name": "gpu", "request": "right"}],
    ]
    assert "*gpu" not in result.text


def test_sharing_only_when_asked_and_said() -> None:
    result = _convert(CRONJOB, share=True)
    pod = _pod(result)
    assert _requests(result) == [("gpu", TIER, 4)]
    assert [c["resources"]["claims"] for c in pod["containers"]] == [[{"name": "gpu"}], [{"name": "gpu"}]]
    [said] = [n for n in result.notes if "share" in n.message]
    assert said.severity == "warning" and "train, eval" not in said.message and "eval, train" in said.message


MULTI_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: pair, namespace: team-a}
spec:
  initContainers:
  - name: warmup
    image: x
    resources: {limits: {nvidia.com/gpu: 1}}
  - name: proxy
    image: x
    restartPolicy: Always
    resources: {limits: {nvidia.com/gpu: 1}}
  containers:
  - name: a
    image: x
    resources: {limits: {nvidia.com/gpu: 2}}
  - name: b
    image: x
    resources: {limits: {nvidia.com/gpu: 1}}
"""


def test_init_containers_reuse_an_app_request_and_sidecars_keep_their_own() -> None:
    result = _convert(MULTI_POD)
    pod = _pod(result)
    # the sidecar runs beside the app containers: its own GPU; warmup reuses b's, as the kubelet did
    assert _requests(result) == [("a", TIER, 2), ("b", TIER, 1), ("proxy", TIER, 1)]
    assert pod["initContainers"][0]["resources"]["claims"] == [{"name": "gpu", "request": "b"}]
    assert pod["initContainers"][1]["resources"]["claims"] == [{"name": "gpu", "request": "proxy"}]
    assert not [n for n in result.notes if "init container" in n.message]


def test_an_init_container_no_request_matches_gets_its_own_and_it_is_said() -> None:
    result = _convert(
        MULTI_POD.replace("nvidia.com/gpu: 1}}\n  - name: proxy", "nvidia.com/gpu: 3}}\n  - name: proxy")
    )
    assert ("warmup", TIER, 3) in _requests(result)
    [said] = [n for n in result.notes if "init container warmup" in n.message]
    assert said.loc.endswith("initContainers[0].resources") and "7 device(s) instead of 4" in said.message


def _lab(**changes: object) -> Platform:
    return Platform.model_validate({"name": "lab", **lab_spec(**changes)["spec"]})


LAB_TIERS = [
    {"name": "full", "deviceType": "gpu"},
    {"name": "hopper", "architecture": "Hopper"},
    {"name": "mig-small", "deviceType": "mig", "migProfile": "1g.10gb"},
    {"name": "ts", "sharing": "time-slicing"},
]


def _mig_pod(resource: str) -> str:
    return (
        MULTI_POD.split("spec:\n")[0]
        + f"spec:\n  containers:\n  - name: a\n    image: x\n    resources: {{limits: {{{resource}: 1}}}}\n"
    )


def test_mig_resources_become_a_mig_request_with_the_profile() -> None:
    with_tier = _convert(
        _mig_pod("nvidia.com/mig-1g.10gb"), resolve_targets("full", _lab(tiers=LAB_TIERS), ())
    )
    assert _requests(with_tier) == [("gpu", "mig-small.lab.example.com", 1)]
    chart = _convert(_mig_pod("nvidia.com/mig-2g.20gb"))
    [template] = chart.templates
    [request] = template["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"]["deviceClassName"] == "mig.nvidia.com"
    assert request["exactly"]["selectors"] == [
        {"cel": {"expression": "device.attributes['gpu.nvidia.com'].profile == '2g.20gb'"}}
    ]
    assert any(n.severity == "warning" and "raw profile selector" in n.message for n in chart.notes)
    assert {"key": "nvidia.com/mig-2g.20gb", "operator": "Exists", "effect": "NoSchedule"} in _pod(chart)[
        "tolerations"
    ]


def test_shared_and_renamed_resources_are_mapped_with_a_warning_or_refused() -> None:
    shared = _convert(_mig_pod("nvidia.com/gpu.shared"), resolve_targets("full", _lab(tiers=LAB_TIERS), ()))
    assert _requests(shared) == [("gpu", "ts.lab.example.com", 1)]
    assert any(n.severity == "warning" and "sharing tier ts" in n.message for n in shared.notes)
    with pytest.raises(InputError, match="time-sliced or MPS replica"):
        _convert(_mig_pod("nvidia.com/gpu.shared"))
    with pytest.raises(InputError, match=r"renamed or unknown .* --map nvidia.com/a100"):
        _convert(_mig_pod("nvidia.com/a100"))
    mapped = _convert(
        _mig_pod("nvidia.com/a100"),
        resolve_targets("full", _lab(tiers=LAB_TIERS), ["nvidia.com/a100=hopper"]),
    )
    assert _requests(mapped) == [("gpu", "hopper.lab.example.com", 1)]


def test_tier_must_name_a_tier_or_a_class_that_exists() -> None:
    lab = _lab()
    assert resolve_targets("hopper", lab, ()).gpu.device_class == "hopper.lab.example.com"
    assert resolve_targets("hopper.lab.example.com", lab, ()).gpu.device_class == "hopper.lab.example.com"
    assert resolve_targets("gpu.nvidia.com", None, ()).gpu.device_class == "gpu.nvidia.com"
    with pytest.raises(InputError, match="pass --spec STACK"):
        resolve_targets("hopper-large", None, ())
    with pytest.raises(InputError, match="'hopper-large' is none of the spec's tiers"):
        resolve_targets("hopper-large", lab, ())
    with pytest.raises(InputError, match="is not RESOURCE=TIER"):
        resolve_targets("hopper", lab, ["nvidia.com/a100"])


def test_with_a_spec_pods_get_the_dra_pools_tolerations_and_templates_the_tenants_labels() -> None:
    result = _convert(
        CRONJOB.replace("namespace: ml", "namespace: team-a"), resolve_targets("full", _lab(), ())
    )
    tolerations = _pod(result)["tolerations"]
    assert ERT in tolerations
    assert {
        "key": "gpu-scheduling.lab.example.com/mode",
        "operator": "Equal",
        "value": "dra",
        "effect": "NoSchedule",
    } in tolerations
    [template] = result.templates
    labels = {
        "gpuplatform.dev/cost-center": "cc-42",
        "gpuplatform.dev/owner": "ml-platform",
        "gpuplatform.dev/tenant": "team-a",
    }
    assert template["spec"]["metadata"]["labels"] == labels
    assert not any("no --spec" in n.message for n in result.notes)
    assert any("no --spec" in n.message for n in _convert(CRONJOB).notes)


def test_a_toleration_the_pod_already_has_is_not_added_twice() -> None:
    text = TRITON.replace(
        "      containers:\n", "      tolerations:\n      - {operator: Exists}\n      containers:\n", 1
    )
    assert _pod(_convert(text))["tolerations"] == [{"operator": "Exists"}]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: x}]\n",
            "no workload requests an nvidia.com/ device-plugin resource",
        ),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 0.5}}}]\n",
            "must be a whole number",
        ),
        (
            "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}\n",
            "unsupported List member 'ConfigMap'",
        ),
        ("a: [1\n", "YAML error"),
        ("apiVersion: v1\nkind: Pod\nkind: Pod\n", "duplicate key"),
    ],
)
def test_unsupported_input_is_refused(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        _convert(text)


def test_cli_writes_nothing_when_one_file_fails(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text(TRITON)
    bad.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: x}]}\n"
    )
    out = tmp_path / "out"
    result = CliRunner().invoke(
        main, ["convert", str(good), str(bad), "--tier", "gpu.nvidia.com", "--out", str(out)]
    )
    assert result.exit_code == 2
    assert f"error: {bad}: no workload requests" in result.stderr
    assert not out.exists()
    result = CliRunner().invoke(main, ["convert", str(good), "--tier", "gpu.nvidia.com", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert (out / "good.yaml").is_file() and (out / "good.claimtemplates.yaml").is_file()
    stdout = CliRunner().invoke(main, ["convert", str(good), "--tier", "gpu.nvidia.com"])
    assert "kind: ResourceClaimTemplate" in stdout.stdout
    assert "warning: " in stdout.stderr and "no --spec" in stdout.stderr


def test_cli_never_overwrites_its_inputs(tmp_path: Path) -> None:
    source = tmp_path / "triton.yaml"
    source.write_text(TRITON)
    result = CliRunner().invoke(
        main, ["convert", str(source), "--tier", "gpu.nvidia.com", "--out", str(tmp_path)]
    )
    assert result.exit_code == 2
    assert "would overwrite the input" in result.stderr
    assert source.read_text() == TRITON
    other = tmp_path / "other"
    other.mkdir()
    (other / "triton.yaml").write_text(TRITON)
    twice = CliRunner().invoke(
        main,
        [
            "convert",
            str(source),
            str(other / "triton.yaml"),
            "--tier",
            "gpu.nvidia.com",
            "--out",
            str(tmp_path / "o"),
        ],
    )
    assert twice.exit_code == 2 and "would both write" in twice.stderr
    assert not (tmp_path / "o").exists()


def test_cli_tier_of_a_spec(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "lab.yaml", lab_spec())
    source = tmp_path / "job.yaml"
    source.write_text(CRONJOB)
    result = CliRunner().invoke(main, ["convert", str(source), "--tier", "hopper", "--spec", str(spec)])
    assert result.exit_code == 0, result.output
    assert "deviceClassName: hopper.lab.example.com" in result.stdout
    unknown = CliRunner().invoke(main, ["convert", str(source), "--tier", "hopper-large"])
    assert (
        unknown.exit_code == 2
        and "error: --tier: 'hopper-large' is none of the chart's classes" in unknown.stderr
    )


@pytest.mark.parametrize("count", ["9223372036854775808", "99999999999999999999999"])
def test_a_count_beyond_int64_is_refused_at_its_field(count: str) -> None:
    # GIVEN a container asking for more devices than a claim's int64 count holds
    text = VLLM.replace(
        'nvidia.com/gpu: "2"\n            cpu', f'nvidia.com/gpu: "{count}"\n            cpu'
    ).replace('limits:\n            nvidia.com/gpu: "2"', f'limits:\n            nvidia.com/gpu: "{count}"')
    # WHEN converted / THEN refused at the resource, no template with that count
    with pytest.raises(InputError) as caught:
        _convert(text)
    (problem,) = caught.value.problems
    assert problem.loc.endswith(".resources.limits.nvidia.com/gpu") or problem.loc.endswith(
        ".resources.requests.nvidia.com/gpu"
    )
    assert "int64" in problem.message


@pytest.mark.parametrize(
    "second",
    [VLLM, VLLM.replace("kind: StatefulSet", "kind: Deployment").replace("  serviceName: vllm\n", "")],
)
def test_a_workload_written_twice_is_refused_not_duplicated(second: str) -> None:
    # GIVEN the same workload twice in one file (or a Deployment of the StatefulSet's name)
    with pytest.raises(InputError) as caught:
        _convert(VLLM + "---\n" + second)
    # THEN refused at the second, naming the first, instead of two templates of one name
    (problem,) = caught.value.problems
    assert problem.loc == "documents[1]"
    assert (
        "ResourceClaimTemplate llm/" in problem.message and "documents[0] already renders" in problem.message
    )


def test_a_workload_in_two_files_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text(VLLM)
    b.write_text(VLLM)
    with pytest.raises(InputError) as caught:
        convert_files([a, b], TARGETS, tmp_path / "out", share=False, kubernetes="1.36")
    assert [p.file for p in caught.value.problems] == [str(b)]
    assert not (tmp_path / "out").exists()


def test_a_template_for_a_namespace_no_tenant_owns_is_said() -> None:
    # issue 39 (low): with --spec, a template written where no tenant's labels, policy or quota reach
    owned = _convert(
        CRONJOB.replace("namespace: ml", "namespace: team-a"), resolve_targets("full", _lab(), ())
    )
    stray = _convert(CRONJOB, resolve_targets("full", _lab(), ()))
    said = "which no tenant of the spec owns"
    assert not [n for n in owned.notes if said in n.message]
    [note] = [n for n in stray.notes if said in n.message]
    assert note.severity == "warning" and "namespace 'ml'" in note.message
    # without a spec there is no tenant to own it: nothing to say
    assert not [n for n in _convert(CRONJOB).notes if said in n.message]
