"""A snapshot field the API never serves is bad input for every command that reads it: exit 2,
`error: <file>:<field>: ...`, nothing written (issue 26, item 7; it was an internal error, exit 70)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gpuplatform.cli import main
from gpuplatform.testing import Cluster, wave_cluster
from tests.gates.harness import fleet_doc, load_platform
from tests.specs import write_spec

Break = Callable[[Cluster], None]


def _allocatable(value: Any) -> Break:
    def mutate(cluster: Cluster) -> None:
        cluster.list("nodes")[0]["status"]["allocatable"] = value

    return mutate


def _memory(cluster: Cluster) -> None:
    cluster.list("resourceslices")[0]["spec"]["devices"][0]["capacity"]["memory"]["value"] = "abc"


def _devices_mapping(cluster: Cluster) -> None:
    spec = cluster.list("resourceslices")[0]["spec"]
    spec["devices"] = {d["name"]: d for d in spec["devices"]}


def _pod_without_metadata(cluster: Cluster) -> None:
    del cluster.list("pods")[0]["metadata"]


#: (what is broken, the file, the field the error names)
BROKEN: dict[str, tuple[Break, str, str]] = {
    "allocatable a list": (_allocatable(["nvidia.com/gpu"]), "nodes.json", "items[0].status.allocatable"),
    "allocatable a string": (_allocatable("8"), "nodes.json", "items[0].status.allocatable"),
    "device memory abc": (
        _memory,
        "resourceslices.json",
        "items[0].spec.devices[0].capacity.memory.value",
    ),
    "devices a mapping": (_devices_mapping, "resourceslices.json", "items[0].spec.devices"),
    "pod without metadata": (_pod_without_metadata, "pods.json", "items[0].metadata"),
}
#: The commands and which kinds they read (init reads no ResourceSlices).
COMMANDS: dict[str, tuple[list[str], set[str]]] = {
    "evidence": (
        ["evidence", "{stack}", "--wave", "app", "--snapshot", "{snap}"],
        {"nodes", "pods", "resourceslices"},
    ),
    "inventory nodes": (["inventory", "nodes", "{snap}"], {"nodes", "pods", "resourceslices"}),
    "init": (["init", "--snapshot", "{snap}", "--name", "x", "--out", "{out}"], {"nodes", "pods"}),
    "capacity": (["capacity", "{stack}", "--snapshot", "{snap}"], {"nodes", "pods", "resourceslices"}),
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("broken", sorted(BROKEN))
def test_a_malformed_snapshot_field_is_bad_input_naming_it(tmp_path: Path, broken: str, command: str) -> None:
    # GIVEN a snapshot of the fleet with one field of a type the API never serves
    mutate, file, field = BROKEN[broken]
    args, reads = COMMANDS[command]
    if file.removesuffix(".json") not in reads:
        pytest.skip(f"{command} does not read {file}")
    doc = fleet_doc()
    platform = load_platform(tmp_path, doc)
    stack = write_spec(tmp_path / "fleet-spec.yaml", doc)
    cluster = wave_cluster(platform, "app")
    mutate(cluster)
    snap = cluster.write(tmp_path / "snap")
    out = tmp_path / "init.yaml"
    # WHEN the command reads it
    argv = [a.format(stack=stack, snap=snap, out=out) for a in args]
    result = CliRunner().invoke(main, argv)
    # THEN it is refused as bad input, naming the file and the field, and nothing is written
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    assert f"error: {snap / file}:{field}: " in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and "internal" not in result.stderr
    assert not out.exists()
