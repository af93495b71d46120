"""Legacy manifests -> claims, over a corpus of realistic manifests (some from public charts' output)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from gpuplatform.cli import main
from gpuplatform.convert.manifests import convert_text
from gpuplatform.errors import InputError

TIER = "nvidia-hopper-large-memory.platform.example.com"

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


def test_triton_deployment_converts_and_keeps_everything_else() -> None:
    result = convert_text(TRITON, "triton.yaml", TIER)
    assert result.converted == ["Deployment/example-triton-inference-server"]
    assert "# Source: triton-inference-server/templates/deployment.yaml" in result.text
    assert "# Source: triton-inference-server/templates/service.yaml" in result.text
    docs = list(yaml.safe_load_all(result.text))
    container = docs[0]["spec"]["template"]["spec"]["containers"][0]
    assert "nvidia.com/gpu" not in str(container["resources"])
    assert container["resources"]["claims"] == [{"name": "gpu"}]
    assert container["livenessProbe"] == {"httpGet": {"path": "/v2/health/live", "port": "http"}}
    assert docs[0]["spec"]["template"]["spec"]["resourceClaims"] == [
        {"name": "gpu", "resourceClaimTemplateName": "example-triton-inference-server-gpu"}
    ]
    assert docs[1] == yaml.safe_load(TRITON.split("---\n")[2])
    [template] = result.templates
    assert template["metadata"] == {"name": "example-triton-inference-server-gpu", "namespace": "inference"}
    assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"] == {
        "deviceClassName": TIER,
        "count": 1,
    }


def test_statefulset_with_requests_and_limits_keeps_cpu_and_the_init_container() -> None:
    result = convert_text(VLLM, "vllm.yaml", TIER)
    doc = yaml.safe_load(result.text)
    pod = doc["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"] == {"requests": {"cpu": "8"}, "claims": [{"name": "gpu"}]}
    assert "resources" not in pod["initContainers"][0]
    assert result.templates[0]["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 2


def test_cronjob_shared_and_per_container_claims() -> None:
    shared = convert_text(CRONJOB, "cron.yaml", TIER)
    assert [t["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] for t in shared.templates] == [4]
    per = convert_text(CRONJOB, "cron.yaml", TIER, shared=False)
    pod = yaml.safe_load(per.text)["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert [c["name"] for c in pod["resourceClaims"]] == ["gpu-train", "gpu-eval"]
    assert [t["metadata"]["name"] for t in per.templates] == [
        "nightly-finetune-train-gpu",
        "nightly-finetune-eval-gpu",
    ]
    assert [t["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] for t in per.templates] == [4, 1]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: x}]\n",
            "no workload requests nvidia.com/gpu",
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
        convert_text(text, "in.yaml", TIER)


def test_cli_writes_nothing_when_one_file_fails(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text(TRITON)
    bad.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: x}]}\n"
    )
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["convert", str(good), str(bad), "--tier", TIER, "--out", str(out)])
    assert result.exit_code == 2
    assert f"error: {bad}: no workload requests nvidia.com/gpu" in result.stderr
    assert not out.exists()
    result = CliRunner().invoke(main, ["convert", str(good), "--tier", TIER, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert (out / "good.yaml").is_file() and (out / "good.claimtemplates.yaml").is_file()
    stdout = CliRunner().invoke(main, ["convert", str(good), "--tier", TIER])
    assert "kind: ResourceClaimTemplate" in stdout.stdout
