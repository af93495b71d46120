"""`convert` keeps a Job's Kueue queue: the `kueue.x-k8s.io/queue-name` label stays as it is (on the Job,
or on a CronJob's `jobTemplate`, where Kueue reads it for the Jobs the CronJob creates) and the note
says which `queue:` the workload entry needs; a spec that declares the workload with another queue is
warned about."""

from __future__ import annotations

from typing import Any

import yaml

from gpuplatform.convert.manifests import convert_text
from gpuplatform.convert.targets import resolve_targets
from gpuplatform.load.stacks import load_stack
from tests.conftest import REPO

# A PyTorch training Job submitted to Kueue the way Kueue's docs submit one
# (site/content/en/docs/tasks/run/jobs.md: the queue label on the Job, `suspend: true`).
TRAIN = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  namespace: training
  labels:
    kueue.x-k8s.io/queue-name: training
spec:
  suspend: true
  parallelism: 1
  completions: 1
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: trainer
        image: nvcr.io/nvidia/pytorch:25.01-py3
        command: ["torchrun", "--nproc-per-node=8", "train.py"]
        resources:
          limits:
            nvidia.com/gpu: 8
"""

NIGHTLY = """\
apiVersion: batch/v1
kind: CronJob
metadata:
  name: nightly
  namespace: training
spec:
  schedule: "0 2 * * *"
  jobTemplate:
    metadata:
      labels:
        kueue.x-k8s.io/queue-name: training
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - name: eval
            image: nvcr.io/nvidia/pytorch:25.01-py3
            resources:
              limits:
                nvidia.com/gpu: 1
"""


def _targets() -> Any:
    (loaded,) = load_stack(REPO / "stacks" / "kueue-fleet.yaml")
    return resolve_targets("any-gpu", loaded.platform, ())


def test_the_training_job_keeps_its_queue_and_says_the_entry_needs_it() -> None:
    result = convert_text(TRAIN, "train.yaml", _targets())
    job = yaml.safe_load(result.text)
    assert job["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "training"}
    assert job["spec"]["suspend"] is True
    [note] = [n for n in result.notes if "LocalQueue" in n.message]
    assert note.loc == "documents[0].metadata.labels.kueue.x-k8s.io/queue-name"
    assert note.severity == "info"
    assert "needs queue: training" in note.message


def test_a_cronjob_keeps_the_queue_of_its_job_template() -> None:
    result = convert_text(NIGHTLY, "nightly.yaml", _targets())
    cron = yaml.safe_load(result.text)
    assert cron["spec"]["jobTemplate"]["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "training"}
    [note] = [n for n in result.notes if "LocalQueue" in n.message]
    assert note.loc.startswith("documents[0].spec.jobTemplate.metadata.labels")


def test_a_spec_entry_with_another_queue_is_warned_about() -> None:
    result = convert_text(TRAIN.replace("queue-name: training", "queue-name: batch"), "t.yaml", _targets())
    [note] = [n for n in result.notes if "queue" in n.message and n.severity == "warning"]
    assert "declares this workload with queue training; set queue: batch" in note.message


def test_a_job_without_the_label_but_queued_in_the_spec_is_warned_about() -> None:
    text = TRAIN.replace("  labels:\n    kueue.x-k8s.io/queue-name: training\n", "")
    result = convert_text(text, "t.yaml", _targets())
    [note] = [n for n in result.notes if n.severity == "warning" and "queue" in n.message]
    assert "set no queue" in note.message
