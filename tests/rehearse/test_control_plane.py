"""The rehearsal's cluster is real Kubernetes: the release's feature gates, RBAC and admission decide,
and the shipped programs run as their ServiceAccount, on the virtual clock."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuplatform.charts.extract import find_helm, helm_template
from gpuplatform.model.platform import Platform
from gpuplatform.output.yaml import dump_documents
from gpuplatform.plan.waves import plan_platform
from gpuplatform.rehearse.assets import Assets
from gpuplatform.rehearse.client import Client
from gpuplatform.rehearse.cluster import Rehearsal
from gpuplatform.rehearse.controlplane import ControlPlane
from gpuplatform.rehearse.fleet import SYSTEM_NODE, fleet_nodes
from gpuplatform.render.operators import helm_charts
from gpuplatform.versions import kube_gates
from tests.conftest import REPO
from tests.realtools.conftest import chart_folder

_CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "bridge.example.com"},
    "spec": {
        "selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}],
        "extendedResourceName": "example.com/gpu",
    },
}


@pytest.mark.parametrize(("minor", "kept"), [("1.36", True), ("1.35", False)])
def test_the_release_decides_what_the_apiserver_keeps(
    minor: str, kept: bool, request: pytest.FixtureRequest, reference: Platform
) -> None:
    """DRAExtendedResource is beta (on) in 1.36 and alpha (off) in 1.35: with it off the apiserver
    drops `extendedResourceName` silently (versions.KUBE_FEATURE_GATES), and so does this one."""
    assets: Assets = request.getfixturevalue(f"assets_{minor.replace('.', '')}")
    with Rehearsal(plan_platform(reference), assets) as cluster:
        assert cluster.control.started_in < 30
        cluster.apply([_CLASS], "test")
        live = cluster.get("deviceclass", "bridge.example.com")
        assert live is not None
        assert ("extendedResourceName" in live["spec"]) is kept
        version = cluster.kubectl(["version", "-o", "json"]).stdout
        assert f'"gitVersion": "v{assets.release}"' in version


def test_rbac_decides_what_the_gate_identity_may_do(assets_136: Assets, reference: Platform) -> None:
    platform = reference
    folder = REPO / "dist" / platform.name / "delivery" / "gates"
    objects = [
        d
        for path in sorted(folder.glob("*.yaml"))
        if path.name != "kustomization.yaml"
        for d in yaml.safe_load_all(path.read_text())
        if d
    ]
    objects.sort(key=lambda o: o["kind"] != "Namespace")
    with Rehearsal(plan_platform(platform), assets_136) as cluster:
        cluster.apply(objects, "test")
        who = "--as=system:serviceaccount:gpuplatform-gates:gpuplatform-gates"
        can = cluster.kubectl(["auth", "can-i", "list", "nodes", who], check=False)
        cannot = cluster.kubectl(["auth", "can-i", "delete", "nodes", who], check=False)
        assert can.stdout.strip() == "yes"
        assert cannot.stdout.strip() == "no"


def test_a_program_runs_as_its_service_account_on_the_virtual_clock(
    assets_136: Assets, reference: Platform
) -> None:
    script = (
        "id -u; start=$(date +%s); sleep 600; echo slept $(( $(date +%s) - start ));"
        " kubectl auth whoami -o jsonpath='{.status.userInfo.username}'; echo;"
        " kubectl get nodes >/dev/null 2>&1 || echo forbidden; touch /root-file 2>/dev/null || echo read-only"
    )
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "probe", "namespace": "default"},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "c",
                            "image": "docker.io/alpine/k8s:1.36.1",
                            "command": ["sh", "-c", script],
                            "securityContext": {"runAsUser": 65534, "readOnlyRootFilesystem": True},
                        }
                    ],
                }
            },
        },
    }
    with Rehearsal(plan_platform(reference), assets_136) as cluster:
        cluster.launcher.programs.add(("default", "probe"))
        began = time.monotonic()
        cluster.apply([job], "test")

        def done() -> bool:
            live = cluster.get("job", "probe", "default") or {}
            return bool((live.get("status") or {}).get("succeeded"))

        cluster.wait(done, 3600, "the probe completes")
        assert time.monotonic() - began < 60  # ten virtual minutes of sleep cost no wall time
        [pod] = cluster.client.list("Pod", "default")
        log = cluster.kubectl(["logs", "-n", "default", pod["metadata"]["name"]]).stdout.split("\n")
    assert log[:5] == [
        "65534",
        "slept 600",
        "system:serviceaccount:default:default",
        "forbidden",
        "read-only",
    ]


def test_stopping_leaves_no_process(assets_136: Assets) -> None:
    plane = ControlPlane(assets_136, kube_gates("1.36"))
    with plane:
        pids = [p.popen.pid for p in plane.processes]
        assert len(pids) == 4
    for pid in pids:
        assert (
            not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text().lower()
        )


def test_a_port_taken_before_etcd_binds_it_is_chosen_again(
    assets_136: Assets, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CI of this stop: etcd exited with `bind: address already in use` on a port chosen free a
    moment before (an outgoing connection took it). The start tries other ports."""
    from gpuplatform.rehearse import controlplane

    real = controlplane.free_ports
    # GIVEN the first ports chosen: one of them is already someone's listening socket
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        chosen = iter([[taken.getsockname()[1], *real(2)]])
        asked: list[int] = []

        def ports(n: int) -> list[int]:
            asked.append(n)
            return next(chosen, None) or real(n)

        monkeypatch.setattr(controlplane, "free_ports", ports)
        # WHEN the control plane starts
        with ControlPlane(assets_136, kube_gates("1.36")) as plane:
            # THEN it serves, on other ports, with one etcd and one apiserver
            client = Client(plane.server, plane.token, plane.ca_file)
            assert client.list("Namespace")
            assert [p.name for p in plane.processes].count("etcd") == 1
            assert asked == [3, 3]  # the first ports refused, the second served


def test_free_ports_are_distinct_bindable_and_below_the_ephemeral_range() -> None:
    from gpuplatform.rehearse import controlplane

    low = controlplane._ephemeral_low()
    ports = controlplane.free_ports(3)
    assert len(set(ports)) == 3
    assert all(p < low for p in ports) or low <= 10030
    for port in ports:
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))


def test_the_fleet_registers_every_node_of_the_first_wave(assets_136: Assets, reference: Platform) -> None:
    """...and stopping leaves no thread behind (a process with threads may not fork its workers)."""
    plan = plan_platform(reference)
    threads = threading.active_count()
    with Rehearsal(plan, assets_136) as cluster:
        names = {n["metadata"]["name"] for n in cluster.client.list("Node")}
    assert threading.active_count() == threads
    assert names == {n.name for n in fleet_nodes(plan)} | {SYSTEM_NODE}
    assert names == {"gpu-legacy-01", "gpu-dra-01", "rehearsal-system-01"}


def _documents(folder: Path) -> list[dict[str, Any]]:
    return [
        d
        for path in sorted(folder.rglob("*.yaml"))
        if path.name != "kustomization.yaml"
        for d in yaml.safe_load_all(path.read_text())
        if d
    ]


def test_rbac_lets_the_sync_identity_write_the_platforms_roles_and_grant_itself_nothing(
    assets_136: Assets, reference: Platform
) -> None:
    """Without `escalate`, the API server's escalation check decides: the sync identity writes and
    binds every role of the last wave (the tree's and the charts', rendered by the real helm), and
    is refused a role or a binding that grants more than it holds."""
    helm = find_helm(REPO)
    if helm is None:
        pytest.skip("helm is not installed (.ci/setup-tools installs it)")
    plan = plan_platform(reference)
    last = plan.waves[-1]
    rbac = [
        d
        for d in _documents(REPO / "dist" / reference.name / "waves" / last.dir_name / "argocd")
        + _documents(REPO / "dist" / reference.name / "delivery" / "gates")
        if d["apiVersion"].startswith("rbac.authorization.k8s.io/")
    ]
    namespaces = {d["metadata"]["namespace"] for d in rbac if "namespace" in d["metadata"]}
    for chart in helm_charts(plan, last):
        folder = chart_folder(chart.chart, chart.version)
        assert folder is not None, chart.chart
        docs = helm_template(helm, folder, chart.values, release=chart.release, namespace=chart.namespace)
        rbac += [d for d in docs if d["apiVersion"].startswith("rbac.authorization.k8s.io/")]
        namespaces.add(chart.namespace)
    identity = _documents(REPO / "dist" / reference.name / "delivery" / "argocd-sync" / "cluster")
    identity.sort(key=lambda o: o["kind"] != "Namespace")
    who = "--as=system:serviceaccount:gpuplatform-sync:gpuplatform-sync"
    with Rehearsal(plan, assets_136) as cluster:
        cluster.apply(identity + [_namespace(n) for n in sorted(namespaces)], "admin")
        # WHEN the identity applies the roles and bindings, roles first
        rbac.sort(key=lambda o: "roleRef" in o)
        applied = cluster.kubectl(
            ["apply", "--server-side", who, "-f", "-"], stdin=dump_documents(rbac), check=False
        )
        # THEN the API server accepts them all
        assert applied.returncode == 0, applied.stderr
        # AND refuses what it does not hold: cluster-admin, a role of everything
        grab = cluster.kubectl(
            [
                "create",
                "clusterrolebinding",
                "grab",
                "--clusterrole=cluster-admin",
                who,
                "--serviceaccount=gpuplatform-sync:gpuplatform-sync",
            ],
            check=False,
        )
        wider = cluster.kubectl(
            ["create", "clusterrole", "grab", "--verb=*", "--resource=*.*", who], check=False
        )
    assert grab.returncode != 0 and "forbidden" in grab.stderr, grab.stderr
    assert wider.returncode != 0 and "forbidden" in wider.stderr, wider.stderr


def _namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def test_a_deleted_job_takes_its_pods_as_kubectl_delete_does(assets_136: Assets, reference: Platform) -> None:
    """`Rehearsal.delete` cascades in the background as `kubectl delete` does (kubectl
    `pkg/cmd/delete`, `--cascade=background`): a batch/v1 Job's own default would orphan its pods
    (kubernetes `pkg/registry/batch/job/strategy.go`, `DefaultGarbageCollectionPolicy`). Kinds are
    found by discovery, with their status subresource."""
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "held", "namespace": "default"},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "c", "image": "docker.io/alpine/k8s:1.36.1", "command": ["true"]}
                    ],
                }
            }
        },
    }
    selector = "batch.kubernetes.io/job-name=held"
    with Rehearsal(plan_platform(reference), assets_136) as cluster:
        assert "status" in cluster.client.resource("batch/v1", "Job").subresources
        assert not cluster.client.resource("v1", "Namespace").namespaced
        cluster.apply([job], "test")
        cluster.wait(
            lambda: cluster.client.list("Pod", "default", labelSelector=selector), 600, "the Job's pod"
        )
        cluster.delete("Job", "held", "default", api_version="batch/v1", wait=True)
        assert cluster.client.get("Job", "held", "default") is None
        cluster.wait(
            lambda: not cluster.client.list("Pod", "default", labelSelector=selector),
            600,
            "the pod collected",
        )


def test_a_pinned_list_is_asked_again_once_anything_is_written(assets_136: Assets) -> None:
    """The agents' loop lists the store again only when its revision moved (`Client.pinned`)."""
    with ControlPlane(assets_136, kube_gates("1.36")) as plane:
        client = Client(plane.server, plane.token, plane.ca_file)
        revision = client.revision()
        with client.pinned(revision):
            first = client.list("Namespace")
            # GIVEN one pass pinned at one revision (controllers may write meanwhile): the
            # pass's own view, not asked again
            assert client.list("Namespace") is first
        # WHEN anything is written (here a ConfigMap, not a Namespace)
        client.create("ConfigMap", {"metadata": {"name": "c"}, "data": {}}, "default")
        moved = client.revision()
        assert moved != revision
        with client.pinned(moved):
            # THEN the pinned list is asked again and sees the store as it is now
            again = client.list("Namespace")
            assert again is not first
            assert [n["metadata"]["name"] for n in again] == [n["metadata"]["name"] for n in first]
            client.create("Namespace", {"metadata": {"name": "later"}})
            assert client.list("Namespace") is again  # pinned at `moved`: the pass's own view
        # AND a thread that is not pinned always asks
        assert "later" in {n["metadata"]["name"] for n in client.list("Namespace")}
