"""The allocator-switch identity may change only its own label on a Node (issue 26, item 5).

An ownerReference to an owner that does not exist makes the garbage collector delete the Node; a
finalizer, an annotation, a taint or any other field is as much not the switch's to write. The
policy compares every field of the old and the new Node; each is changed here, one at a time.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from gpuplatform.model.platform import Platform
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.allocator_switch import UNCHANGED, switch_identity
from tests.admission.admission_env import admit

SWITCH = "system:serviceaccount:gpuplatform-gates:gpuplatform-switch"
OWNED = "nvidia.com/dra-kubelet-plugin"

#: A Node as the API server serves it (kubelet-registered, GPU Operator-labelled).
NODE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {
        "name": "gpu-dra-01",
        "uid": "14336b0f-e28a-41e5-8333-fd36ddcb3cda",
        "resourceVersion": "4711",
        "creationTimestamp": "2026-07-02T19:30:00Z",
        "labels": {
            "kubernetes.io/hostname": "gpu-dra-01",
            "nvidia.com/gpu.deploy.device-plugin": "false",
            "gpu-scheduling.example.com/mode": "dra",
        },
        "annotations": {
            "node.alpha.kubernetes.io/ttl": "0",
            "volumes.kubernetes.io/controller-managed-attach-detach": "true",
        },
        "managedFields": [{"manager": "kubelet", "operation": "Update", "apiVersion": "v1"}],
    },
    "spec": {
        "podCIDR": "10.244.1.0/24",
        "podCIDRs": ["10.244.1.0/24"],
        "providerID": "aws:///eu-west-1a/i-0abc",
    },
    "status": {
        "allocatable": {"cpu": "64", "memory": "503Gi", "pods": "110"},
        "capacity": {"cpu": "64", "memory": "512Gi", "pods": "110"},
        "conditions": [{"type": "Ready", "status": "True"}],
    },
}

Change = Callable[[dict[str, Any]], None]


def _set(path: str, value: Any) -> Change:
    def change(node: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target = node
        for name in parents:
            target = target.setdefault(name, {})
        target[last] = value

    return change


def _drop(path: str) -> Change:
    def change(node: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target = node
        for name in parents:
            target = target[name]
        del target[last]

    return change


#: (what changes, the field the denial names)
FORBIDDEN: dict[str, tuple[Change, str]] = {
    "an ownerReference to a missing owner": (
        _set(
            "metadata.ownerReferences",
            [
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "name": "gone",
                    "uid": "00000000-0000-0000-0000-000000000000",
                }
            ],
        ),
        "metadata.ownerReferences",
    ),
    "a finalizer": (_set("metadata.finalizers", ["example.com/hold"]), "metadata.finalizers"),
    "an annotation added": (
        _set("metadata.annotations", NODE["metadata"]["annotations"] | {"example.com/x": "1"}),
        "metadata.annotations",
    ),
    "an annotation changed": (
        _set(
            "metadata.annotations", NODE["metadata"]["annotations"] | {"node.alpha.kubernetes.io/ttl": "15"}
        ),
        "metadata.annotations",
    ),
    "the annotations removed": (_drop("metadata.annotations"), "metadata.annotations"),
    "a deletion grace period": (
        _set("metadata.deletionGracePeriodSeconds", 0),
        "metadata.deletionGracePeriodSeconds",
    ),
    "a deletion timestamp": (
        _set("metadata.deletionTimestamp", "2026-12-04T00:00:00Z"),
        "metadata.deletionTimestamp",
    ),
    "a generateName": (_set("metadata.generateName", "gpu-"), "metadata.generateName"),
    "a namespace": (_set("metadata.namespace", "default"), "metadata.namespace"),
    "a selfLink": (_set("metadata.selfLink", "/api/v1/nodes/x"), "metadata.selfLink"),
    "the name": (_set("metadata.name", "gpu-dra-02"), "metadata.name"),
    "the uid": (_set("metadata.uid", "ef039bfd-d5dc-42af-92b7-b24402360be6"), "metadata.uid"),
    "a generation": (_set("metadata.generation", 2), "metadata.generation"),
    "the creation time": (
        _set("metadata.creationTimestamp", "2020-01-01T00:00:00Z"),
        "metadata.creationTimestamp",
    ),
    "a taint": (
        _set("spec.taints", [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]),
        "spec",
    ),
    "cordoned": (_set("spec.unschedulable", True), "spec"),
    "the providerID": (_set("spec.providerID", "aws:///eu-west-1a/i-0def"), "spec"),
    "the podCIDRs": (_set("spec.podCIDRs", ["10.244.9.0/24"]), "spec"),
    "the status": (_set("status.allocatable", {"cpu": "64", "nvidia.com/gpu": "8"}), "status"),
    "another label changed": (
        _set("metadata.labels", NODE["metadata"]["labels"] | {"gpu-scheduling.example.com/mode": "legacy"}),
        "label",
    ),
    "another label added": (
        _set("metadata.labels", NODE["metadata"]["labels"] | {"example.com/x": "1"}),
        "label",
    ),
    "another label removed": (
        _set(
            "metadata.labels",
            {k: v for k, v in NODE["metadata"]["labels"].items() if k != "kubernetes.io/hostname"},
        ),
        "label",
    ),
    "the labels removed": (_drop("metadata.labels"), "label"),
    "the owned label set to another value": (
        _set("metadata.labels", NODE["metadata"]["labels"] | {OWNED: "false"}),
        OWNED,
    ),
}

ALLOWED: dict[str, Change] = {
    "the owned label set": _set("metadata.labels", NODE["metadata"]["labels"] | {OWNED: "true"}),
    "the owned label set, with the server's bookkeeping": lambda node: [
        _set("metadata.labels", NODE["metadata"]["labels"] | {OWNED: "true"})(node),
        _set("metadata.resourceVersion", "4712")(node),
        _set(
            "metadata.managedFields",
            [*NODE["metadata"]["managedFields"], {"manager": "kubectl-label", "operation": "Update"}],
        )(node),
    ],
    "nothing changed": lambda node: None,
}


def _policy(reference: Platform) -> dict[str, Any]:
    plan = plan_platform(reference)
    return next(o for o in switch_identity(plan, "pilot-pool") if o["kind"] == "ValidatingAdmissionPolicy")


def _changed(change: Change, old: dict[str, Any]) -> dict[str, Any]:
    new = copy.deepcopy(old)
    change(new)
    return new


@pytest.mark.parametrize("what", sorted(FORBIDDEN))
def test_the_switch_may_change_no_other_field_of_a_node(reference: Platform, what: str) -> None:
    # GIVEN a Node and the same Node with one field changed
    change, field = FORBIDDEN[what]
    new = _changed(change, NODE)
    # WHEN the switch identity sends the update / THEN it is denied, naming the field
    denied = admit(_policy(reference), new, old=NODE, user=SWITCH)
    assert denied and any(field in message for message in denied), denied
    # AND the policy does not judge anyone else
    assert admit(_policy(reference), new, old=NODE, user="system:node:gpu-dra-01") == []


@pytest.mark.parametrize("what", sorted(FORBIDDEN))
def test_the_same_change_is_denied_with_the_owned_label_set_alongside(reference: Platform, what: str) -> None:
    change, _ = FORBIDDEN[what]
    if what.startswith(("the labels", "the owned", "another label")):
        pytest.skip("a change to the labels themselves")
    new = _changed(change, _changed(ALLOWED["the owned label set"], NODE))
    assert admit(_policy(reference), new, old=NODE, user=SWITCH) != []


@pytest.mark.parametrize("what", sorted(ALLOWED))
def test_the_switch_may_set_or_remove_its_label(reference: Platform, what: str) -> None:
    new = _changed(ALLOWED[what], NODE)
    assert admit(_policy(reference), new, old=NODE, user=SWITCH) == []
    assert admit(_policy(reference), NODE, old=new, user=SWITCH) == []


#: ObjectMeta's fields (k8s.io/apimachinery/pkg/apis/meta/v1 types.go) and a Node's top level.
OBJECT_META = {
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
}


def test_every_field_is_compared_but_the_labels_and_the_servers_bookkeeping() -> None:
    compared = {path.removeprefix("metadata.") for path in UNCHANGED if path.startswith("metadata.")}
    assert compared == OBJECT_META - {"labels", "resourceVersion", "managedFields"}
    assert {path for path in UNCHANGED if not path.startswith("metadata.")} == {"spec", "status"}
    tested = {field for _, field in FORBIDDEN.values()}
    assert set(UNCHANGED) <= tested
