"""The migration register and the node list: one row per workload, owners resolved."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from gpuplatform.cli import main
from gpuplatform.evidence.register import HUMAN_FIELDS, gpu_count, node_rows, workload_rows
from gpuplatform.snapshot.read import load_snapshot
from gpuplatform.testing import pod
from tests.specs import healthy_cluster, trainer_pod


def _snapshot(tmp_path: Path, extra_pods: list[dict] | None = None, jobs: list[dict] | None = None):  # type: ignore[no-untyped-def, type-arg]
    cluster = healthy_cluster()
    cluster.kinds["pods"] = [*(cluster.kinds["pods"] or []), *(extra_pods or [])]
    cluster.kinds["jobs"] = jobs or []
    return load_snapshot(cluster.write(tmp_path / "snap"))


def test_one_row_per_workload_with_owners_resolved(tmp_path: Path) -> None:
    second = trainer_pod("trainer-7d4f9-y3y")
    nightly = pod(
        "nightly-2912-abc",
        "ml",
        "gpu-legacy-01",
        gpus=1,
        owners=[{"kind": "Job", "name": "nightly-2912", "controller": True}],
    )
    job = {
        "metadata": {
            "name": "nightly-2912",
            "namespace": "ml",
            "ownerReferences": [{"kind": "CronJob", "name": "nightly", "controller": True}],
        }
    }
    rows = {
        (r.namespace, r.kind, r.name): r for r in workload_rows(_snapshot(tmp_path, [second, nightly], [job]))
    }
    validation = next(name for ns, kind, name in rows if ns == "gpu-dra-pilot")
    assert validation.startswith("gpu-dra-validation-")
    # the model's unmigrated pods, one per legacy pool and one that tolerates every taint, are bare pods
    unmigrated = {(ns, kind, name) for ns, kind, name in rows if ns == "gpu-legacy"}
    assert unmigrated and {kind for _, kind, _ in unmigrated} == {"Pod"}
    assert set(rows) - unmigrated == {
        ("ml", "Deployment", "trainer"),
        ("ml", "CronJob", "nightly"),
        ("gpu-dra-pilot", "Pod", validation),
    }
    trainer = rows[("ml", "Deployment", "trainer")]
    assert trainer.pods == 2 and trainer.gpus == 2
    assert trainer.products == ["NVIDIA-H100-80GB-HBM3"]
    assert rows[("ml", "CronJob", "nightly")].gpus == 1
    row = trainer.as_dict()
    assert all(row[f] == "" for f in HUMAN_FIELDS)


def test_gpu_count_takes_the_larger_of_init_and_app_containers() -> None:
    p = {
        "spec": {
            "initContainers": [{"resources": {"limits": {"nvidia.com/gpu": "4"}}}],
            "containers": [
                {"resources": {"requests": {"nvidia.com/gpu": "1"}}},
                {"resources": {"limits": {"nvidia.com/gpu": "2"}}},
            ],
        }
    }
    assert gpu_count(p) == 4


def test_device_plugin_pods_are_not_workloads_and_nodes_show_plugins(tmp_path: Path) -> None:
    snapshot = _snapshot(tmp_path)
    assert "nvidia-device-plugin-daemonset" not in " ".join(r.name for r in workload_rows(snapshot))
    nodes = {n.name: n for n in node_rows(snapshot)}
    assert nodes["gpu-legacy-01"].device_plugin_pod and not nodes["gpu-legacy-01"].dra_plugin_pod
    assert nodes["gpu-dra-01"].dra_plugin_pod and nodes["gpu-dra-01"].slice_devices == 8
    assert nodes["gpu-dra-01"].allocatable in ("", "0")


def test_cli_formats(tmp_path: Path) -> None:
    folder = healthy_cluster().write(tmp_path / "snap")
    runner = CliRunner()
    table = runner.invoke(main, ["inventory", "register", str(folder)])
    assert table.exit_code == 0 and table.stdout.splitlines()[0].startswith("NAMESPACE")
    csv = runner.invoke(main, ["inventory", "register", str(folder), "--format", "csv"])
    assert csv.stdout.splitlines()[0].startswith("namespace,kind,name,pods,gpusPerPod")
    rows = yaml.safe_load(
        runner.invoke(main, ["inventory", "register", str(folder), "--format", "yaml"]).stdout
    )
    assert {r["name"] for r in rows} >= {"trainer"}
    pods_only = runner.invoke(main, ["inventory", "register", str(folder / "pods.json")])
    assert pods_only.exit_code == 0 and "trainer" in pods_only.stdout
    nodes = runner.invoke(main, ["inventory", "nodes", str(folder)])
    assert "gpu-dra-01" in nodes.stdout


def test_table_headers_are_words_and_columns_stay_apart() -> None:
    from gpuplatform.evidence.tables import header, render_rows

    assert header("allocatableNvidiaGpu") == "ALLOCATABLE NVIDIA GPU"
    assert header("draKubeletPluginPod") == "DRA KUBELET PLUGIN POD"
    assert header("gpusPerPod") == "GPUS PER POD"
    table = render_rows([{"gpuProduct": "NVIDIA-H100-80GB-HBM3", "gpuCountLabel": "8"}], "table")
    assert table.splitlines() == [
        "GPU PRODUCT             GPU COUNT LABEL",
        "NVIDIA-H100-80GB-HBM3   8",
    ]


KUEUE_ADMITTED = Path(__file__).parent / "data" / "kueue_admitted_job.json"


def test_a_job_kueue_admitted_keeps_the_placement_its_owner_wrote(tmp_path: Path) -> None:
    """Recorded from the real Kueue in a rehearsal: admitting the Job merged its flavor's
    `nodeLabels` (the platform's mode label) into the pod template; the register reads the template
    Kueue's Workload recorded, so `check` does not carry that label into the claim form (GP280)."""
    recorded = json.loads(KUEUE_ADMITTED.read_text())
    [admitted] = recorded["pods"]
    assert admitted["spec"]["nodeSelector"]  # what Kueue merged in
    cluster = healthy_cluster()
    cluster.kinds["pods"] = [*(cluster.kinds["pods"] or []), admitted]
    cluster.kinds["jobs"] = recorded["jobs"]
    cluster.kinds["workloads"] = recorded["workloads"]
    rows = {
        (r.namespace, r.kind, r.name): r for r in workload_rows(load_snapshot(cluster.write(tmp_path / "a")))
    }
    assert rows[("training", "Job", "train")].node_selector == {}
    assert rows[("training", "Job", "train")].queue == "training"
    cluster.kinds["workloads"] = []  # a snapshot without the Workload: the pod as it is
    rows = {
        (r.namespace, r.kind, r.name): r for r in workload_rows(load_snapshot(cluster.write(tmp_path / "b")))
    }
    assert rows[("training", "Job", "train")].node_selector == admitted["spec"]["nodeSelector"]


def test_simulate_replays_an_undeclared_kueue_job_where_its_owner_placed_it(tmp_path: Path) -> None:
    """The replay of a snapshot's undeclared GPU pods reads the same placement as the register."""
    from gpuplatform.load.stacks import load_stack
    from gpuplatform.plan.waves import plan_platform
    from gpuplatform.simulate.workloads import snapshot_workloads
    from tests.conftest import REPO

    recorded = json.loads(KUEUE_ADMITTED.read_text())
    cluster = healthy_cluster()
    cluster.kinds["pods"] = [*(cluster.kinds["pods"] or []), *recorded["pods"]]
    cluster.kinds["jobs"] = recorded["jobs"]
    cluster.kinds["workloads"] = recorded["workloads"]
    [reference] = [
        lp for lp in load_stack(REPO / "stacks" / "reference.py") if lp.platform.name == "reference"
    ]
    observed, _ = snapshot_workloads(
        plan_platform(reference.platform), load_snapshot(cluster.write(tmp_path / "s"))
    )
    [train] = [w for w in observed if w.namespace == "training"]
    assert train.node_selector == {}


NIM_REPLACED = Path(__file__).parent / "data" / "nim_replaced_services.json"


def test_the_nim_services_the_spec_replaces_are_its_own_not_undeclared_workloads(tmp_path: Path) -> None:
    """nim-lab's running NIM services, recorded from a rehearsal (the NIM Operator's Deployments,
    their ReplicaSets and pods as the real controllers made them): the spec declares them (a
    NIMService runs as the Deployment of its name), so neither the replay nor the capacity register
    takes them for undeclared workloads that nothing retires (the preflight refused nim-lab: GP290)."""
    from gpuplatform.capacity.register import register_demand
    from gpuplatform.load.stacks import load_stack
    from gpuplatform.plan.waves import plan_platform
    from gpuplatform.simulate.workloads import snapshot_workloads
    from tests.conftest import REPO

    recorded = json.loads(NIM_REPLACED.read_text())
    cluster = healthy_cluster()
    cluster.kinds["pods"] = [*(cluster.kinds["pods"] or []), *recorded["pods"]]
    cluster.kinds["replicasets"] = [*(cluster.kinds.get("replicasets") or []), *recorded["replicasets"]]
    snapshot = load_snapshot(cluster.write(tmp_path / "s"))
    rows = {(r.namespace, r.kind, r.name) for r in workload_rows(snapshot)}
    assert {("inference", "Deployment", "llama3-8b"), ("inference", "Deployment", "embedder")} <= rows
    [nim_lab] = load_stack(REPO / "stacks" / "nim-lab.yaml")
    observed, _ = snapshot_workloads(plan_platform(nim_lab.platform), snapshot)
    assert not [w for w in observed if w.namespace == "inference"]
    demand = register_demand(nim_lab.platform, workload_rows(snapshot))
    assert not [d.name for d in demand.extra if "inference/" in d.name]
