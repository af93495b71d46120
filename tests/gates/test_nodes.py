"""Pools as the cluster knows them: by name, by the provisioner's label, or by the spec's own labels."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gpuplatform.gates.nodes import PROVISIONER_LABELS, pool_selector
from gpuplatform.model import NodePool


def _pool(**fields: object) -> NodePool:
    return NodePool.model_validate({"name": "p", "product": "L40S", **fields})


def _node(name: str, **labels: str) -> dict[str, object]:
    return {"metadata": {"name": name, "labels": labels}}


def test_static_pools_by_name() -> None:
    s = pool_selector(_pool(nodes=["a", "b"]))
    assert s.found([_node("a"), _node("c"), _node("b")]) == ["a", "b"]
    assert s.kubectl_args() == ["a", "b"] and s.min_nodes == 2
    assert s.node_selector_term() == {
        "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a", "b"]}]
    }


@pytest.mark.parametrize(
    ("provisioner", "label"),
    [
        ({"kind": "karpenter", "name": "gpu"}, "karpenter.sh/nodepool"),
        ({"kind": "node-group", "name": "gpu", "cloud": "eks"}, "eks.amazonaws.com/nodegroup"),
        ({"kind": "node-group", "name": "gpu", "cloud": "gke"}, "cloud.google.com/gke-nodepool"),
        ({"kind": "node-group", "name": "gpu", "cloud": "aks"}, "kubernetes.azure.com/agentpool"),
    ],
)
def test_provisioner_pools_by_their_label(provisioner: dict[str, str], label: str) -> None:
    s = pool_selector(_pool(provisioner=provisioner))
    assert s.found([_node("x", **{label: "gpu"}), _node("y", **{label: "other"}), _node("gpu")]) == ["x"]
    assert s.kubectl_args() == ["-l", f"{label}=gpu"]
    assert s.min_nodes == 1 and s.resolvable
    assert PROVISIONER_LABELS[(provisioner["kind"], provisioner.get("cloud"))] == label


def test_node_labels_replace_the_provisioner_label() -> None:
    s = pool_selector(
        _pool(
            provisioner={
                "kind": "cluster-api",
                "name": "md",
                "nodeLabels": {"node.cluster.x-k8s.io/pool": "gpu"},
                "minNodes": 0,
            }
        )
    )
    assert s.found([_node("x", **{"node.cluster.x-k8s.io/pool": "gpu"}), _node("md")]) == ["x"]
    assert s.min_nodes == 0


def test_pools_the_gates_cannot_find() -> None:
    for provisioner in ({"kind": "cluster-api", "name": "md"}, {"kind": "node-group", "name": "ng"}):
        s = pool_selector(_pool(provisioner=provisioner))
        assert not s.resolvable and s.found([_node("md"), _node("ng")]) == []
        assert "neither nodes nor labels" in s.describe()


def test_cloud_only_for_node_groups() -> None:
    with pytest.raises(ValidationError, match="cloud is for node-group pools"):
        _pool(provisioner={"kind": "karpenter", "name": "k", "cloud": "eks"})
