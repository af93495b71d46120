"""A user's tests of a stack with `gpuplatform.testing`, checked by `mypy --strict` (tests/test_typed_api.py)."""

from __future__ import annotations

from pathlib import Path

import gpuplatform as gp
from gpuplatform import testing
from tests.typed_api.reference_stack import platform


def test_the_tree_is_valid_and_parses(tmp_path: Path) -> None:
    testing.assert_valid_tree(platform)
    report: gp.Report = platform.synth(tmp_path)
    assert report.exit_code == 0
    written: testing.Tree = tmp_path / platform.name
    testing.assert_valid_tree(written, kubernetes="1.36")
    objects: dict[str, list[dict[str, object]]] = testing.tree_objects(platform)
    assert objects


def test_the_gates_judge_a_broken_cluster(tmp_path: Path) -> None:
    cluster: testing.Cluster = testing.wave_cluster(platform, "pilot-pool")
    cluster.list("pods").append(testing.device_plugin_pod("gpu-dra-01"))
    cluster.list("pods").append(testing.kubelet_plugin_pod("gpu-legacy-01"))
    cluster.list("pods").append(
        testing.pod("trainer", "ml", "gpu-legacy-01", gpus=1, containers=testing.ready("main"))
    )
    cluster.list("nodes").append(testing.node("gpu-extra-01", gpus="8"))
    cluster.list("resourceclaims").append(testing.claim("c", "ml", "gpu-dra-01"))
    for fault in testing.FAULTS:
        testing.inject_fault(cluster, fault, 0, testing.VALUES[0])
    folder: Path = cluster.write(tmp_path / "snapshot")
    statuses = {r.id: r.status for r in testing.judge_wave(platform, "pilot-pool", folder)}
    assert statuses["allocator-exclusivity"] == "broken"
    assert testing.OPERATOR_NAMESPACE == "gpu-operator"
