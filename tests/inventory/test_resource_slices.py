"""ResourceSlice reading: lists, multi-doc YAML, v1beta1 normalisation, generations, located errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuplatform.errors import InputError
from gpuplatform.inventory import parse_resource_slices, read_resource_slices

SAMPLE = Path(__file__).resolve().parents[2].parent / "shared/reference/samples"
V1BETA1 = """
apiVersion: resource.k8s.io/v1beta1
kind: ResourceSlice
metadata: {name: a}
spec:
  driver: gpu.nvidia.com
  nodeName: n1
  pool: {name: n1, generation: 2, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    basic:
      attributes: {type: {string: gpu}}
      capacity: {memory: {value: 80Gi}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: old}
spec:
  driver: gpu.nvidia.com
  nodeName: n1
  pool: {name: n1, generation: 1, resourceSliceCount: 1}
  devices: [{name: gpu-9}]
"""


def test_v1beta1_is_unwrapped_and_old_generations_dropped(tmp_path: Path) -> None:
    # GIVEN two generations of one pool in a multi-document file
    (tmp_path / "slices.yaml").write_text(V1BETA1)
    # WHEN reading the folder
    pools = read_resource_slices(tmp_path)
    # THEN only generation 2 remains, in v1 shape
    assert [(p.node, p.generation) for p in pools] == [("n1", 2)]
    assert pools[0].devices == [
        {
            "name": "gpu-0",
            "attributes": {"type": {"string": "gpu"}},
            "capacity": {"memory": {"value": "80Gi"}},
        }
    ]


def test_bad_field_names_file_and_path() -> None:
    with pytest.raises(InputError) as err:
        parse_resource_slices(
            "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nspec: {pool: {name: p}}\n", "x.yaml"
        )
    assert "x.yaml:spec.driver" in str(err.value)


@pytest.mark.skipif(not SAMPLE.exists(), reason="shared/ samples absent")
def test_real_kubectl_list_output() -> None:
    pools = read_resource_slices(SAMPLE / "resourceslice-gpu.nvidia.com-v25.12.0-k8s-v1.36.yaml")
    assert len(pools) == 2 and all(len(p.devices) == 1 for p in pools)
