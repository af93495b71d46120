"""`gpuplatform.testing` used as a platform team uses it: only `gpuplatform` and
`gpuplatform.testing` are imported, on the lab platform of docs/sdk.md."""

from __future__ import annotations

import copy
import re
import subprocess
import sys
import types
from functools import cache
from pathlib import Path

import pytest

import gpuplatform as gp
from gpuplatform.testing import (
    FAULTS,
    VALUES,
    Cluster,
    assert_valid_tree,
    claim,
    inject_fault,
    judge_wave,
    pod,
    tree_objects,
    wave_cluster,
)

PAGE = Path(__file__).resolve().parents[2] / "docs" / "sdk.md"


def _blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", PAGE.read_text(), flags=re.M | re.S)


@cache
def _lab() -> types.ModuleType:
    """The page's Python stack, imported as the module `lab` its test example imports."""
    module = types.ModuleType("lab")
    exec(_blocks()[0], module.__dict__)
    return module


def test_the_pages_example_tests_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN the page's example test module, importing the page's stack as `lab`
    monkeypatch.setitem(sys.modules, "lab", _lab())
    [source] = [b for b in _blocks() if "gpuplatform.testing" in b]
    namespace: dict[str, object] = {}
    exec(source, namespace)
    tests = [f for name, f in namespace.items() if name.startswith("test_") and callable(f)]
    # WHEN each of its tests runs / THEN it passes
    assert len(tests) == 3
    for test in tests:
        test()


def test_an_invalid_object_is_named_with_its_field(tmp_path: Path) -> None:
    # GIVEN the lab platform's tree, written by synth, with one Node given a field Nodes lack
    platform: gp.Platform = _lab().platform
    platform.synth(tmp_path)
    tree = tmp_path / "lab"
    assert tree_objects(tree) == tree_objects(platform)
    node = tree / "nodes/new/dra/node_gpu-02.yaml"
    node.write_text(node.read_text().replace("metadata:\n", "metadata:\n  labelz: {}\n", 1))
    # WHEN the tree is asserted valid / THEN the Node and its field are named
    with pytest.raises(AssertionError, match=r"node_gpu-02.yaml: Node/gpu-02: metadata: .*'labelz'"):
        assert_valid_tree(tree, kubernetes="1.36")
    assert_valid_tree(platform)


def test_a_kind_without_a_schema_is_invalid() -> None:
    files = {"extra.yaml": b"apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n"}
    with pytest.raises(AssertionError, match=r"extra.yaml: Widget/w: no schema for Widget"):
        assert_valid_tree(files, kubernetes="1.36")
    with pytest.raises(TypeError):
        assert_valid_tree(files)


def _with_a_claim_holder(cluster: Cluster) -> Cluster:
    holder = pod("trainer", "team-a", "gpu-02", resourceClaims=[{"name": "gpu", "resourceClaimName": "c"}])
    holder["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": "c"}]
    cluster.list("pods").append(holder)
    cluster.list("resourceclaims").append(claim("c", "team-a", "gpu-02", reserved_uid="uid-team-a-trainer"))
    return cluster


def _changes(healthy: Cluster, fault: str) -> bool:
    for i in range(4):
        for value in VALUES:
            cluster = copy.deepcopy(healthy)
            inject_fault(cluster, fault, i, value)
            if cluster != healthy:
                return True
    return False


def test_every_fault_changes_the_models_cluster() -> None:
    # GIVEN the lab platform's cluster in its claims wave, with a claim and the pod holding it
    healthy = _with_a_claim_holder(wave_cluster(_lab().platform, "claims"))
    # WHEN each fault is injected at a few objects with each value / THEN some change the cluster
    assert [fault for fault in FAULTS if not _changes(healthy, fault)] == []
    with pytest.raises(ValueError, match="unknown fault 'drop-pods'"):
        inject_fault(healthy, "drop-pods", 0, "")


def test_a_snapshot_folder_is_judged_as_the_cluster_it_holds(tmp_path: Path) -> None:
    platform: gp.Platform = _lab().platform
    cluster = wave_cluster(platform, "pilot")
    cluster.list("nodes").clear()
    folder = cluster.write(tmp_path / "snapshot")
    in_memory = [(r.id, r.status) for r in judge_wave(platform, "pilot", cluster)]
    assert [(r.id, r.status) for r in judge_wave(platform, "pilot", folder)] == in_memory
    assert ("spec-nodes-exist", "broken") in in_memory


def test_the_helpers_import_no_test_framework() -> None:
    code = (
        "import sys, gpuplatform.testing\n"
        "print(sorted(m for m in ('pytest', 'hypothesis', 'syrupy', '_pytest') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
