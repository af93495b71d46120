"""Issue 17, items 4, 6 and 7: names and values with Kubernetes' rules, exit codes that mean what
they say, every file through the bounded reader, work bounded by the spec's size."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from gpuplatform.cli import main
from gpuplatform.load.yaml_input import MAX_DATA_BYTES
from gpuplatform.model.limits import MAX_FILES, size_errors
from tests.conftest import REPO, sigint_default
from tests.specs import minimal_spec, python_stack, write_spec

Mutation = Callable[[dict[str, Any]], None]
_CLI = [sys.executable, "-m", "gpuplatform.cli"]


def _run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def _set(path: str, value: Any) -> Mutation:
    def mutate(doc: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = doc
        for part in parents:
            node = node[int(part)] if part.isdigit() else node.setdefault(part, {})
        node[int(last) if last.isdigit() else last] = value

    return mutate


def _spec(tmp_path: Path, *mutations: Mutation) -> Path:
    doc = minimal_spec()
    for m in mutations:
        m(doc)
    return write_spec(tmp_path / "lab.yaml", doc)


_NIM = {"name": "llm", "namespace": "team-a", "tier": "full", "movesIn": "claims"}

# --- 4. names and values Kubernetes would reject -------------------------------------------------

REJECTED: list[tuple[str, list[Mutation], str]] = [
    ("platform-name-newline", [_set("metadata.name", "lab\n")], "metadata.name"),
    ("wave-name-newline", [_set("spec.waves.3.name", "cutover\n")], "spec.waves[3].name"),
    ("namespace-newline", [_set("spec.tenants.0.namespace", "team-a\n")], "spec.tenants[0].namespace"),
    ("quantity-newline", [_set("spec.tiers.0.minMemory", "40Gi\n")], "spec.tiers[0].minMemory"),
    ("version-newline", [_set("spec.kubernetes.version", "1.36.1\n")], "spec.kubernetes.version"),
    ("version-unicode-digits", [_set("spec.kubernetes.version", "١.٣٦.١")], "spec.kubernetes.version"),
    (
        "taint-value-newline",
        [_set("spec.nodePools.1.taint", {"key": "a/b", "value": "dra\n"})],
        "spec.nodePools[1].taint.value",
    ),
    ("timeout-beyond-int64", [_set("spec.delivery.timeoutMinutes", 10**19)], "spec.delivery.timeoutMinutes"),
    (
        "replicas-beyond-int32",
        [_set("spec.nimServices", [{**_NIM, "replicas": 2**31}])],
        "spec.nimServices[0].replicas",
    ),
    ("quota-of-1e40", [_set("spec.tenants.0.quota.devices", 10**40)], "spec.tenants[0].quota.devices"),
    ("label-key-prefix-over-253", [_set("spec.domain", ".".join(["d" * 60] * 4) + ".ab")], "spec.domain"),
    ("helm-value-nan", [_set("spec.draDriver.values", {"x": float("nan")})], "spec.draDriver.values"),
    (
        "helm-value-inf",
        [_set("spec.gpuOperator.values", {"x": {"y": float("inf")}})],
        "spec.gpuOperator.values",
    ),
    (
        "feature-gate-injection",
        [_set("spec.kubernetes.featureGates", {"DRAExtendedResource=true,Evil": True})],
        "spec.kubernetes.featureGates",
    ),
    ("image-with-space", [_set("spec.delivery.kubectlImage", "alpine k8s")], "spec.delivery.kubectlImage"),
    (
        "extended-resource-in-kubernetes-io",
        [_set("spec.bridges", [{"name": "legacy", "extendedResourceName": "kubernetes.io/gpu"}])],
        "spec.bridges[0].extendedResourceName",
    ),
]


@pytest.mark.parametrize(("mutations", "loc"), [r[1:] for r in REJECTED], ids=[r[0] for r in REJECTED])
@pytest.mark.parametrize("command", ["synth", "check", "plan"])
def test_names_and_values_kubernetes_rejects_are_refused_by_every_command_at_their_field(
    tmp_path: Path, mutations: list[Mutation], loc: str, command: str
) -> None:
    spec = _spec(tmp_path, *mutations)
    out = tmp_path / "out"
    args = [command, str(spec)] + (["--out", str(out)] if command == "synth" else [])
    result = _run(*args)
    assert result.exit_code == 2, result.output
    assert f":{loc}" in result.stderr
    assert "Traceback" not in result.output and "internal" not in result.stderr
    assert not out.exists()


def test_a_raw_selector_that_does_not_compile_is_refused_alike_by_synth_plan_and_check(
    tmp_path: Path,
) -> None:
    spec = _spec(
        tmp_path, _set("spec.tiers.0", {"name": "full", "cel": "device.attributes['gpu.nvidia.com'"})
    )
    out = tmp_path / "out"
    for args in (["synth", str(spec), "--out", str(out)], ["plan", str(spec)], ["check", str(spec)]):
        result = _run(*args)
        assert result.exit_code == 2, (args, result.output)
        assert f"{spec}:spec.tiers[0].cel: GP310 tier 'full': selector does not compile" in result.stderr
    assert not out.exists()


# --- 6. internal errors and hangs for ordinary input ---------------------------------------------


def _raw_spec(tmp_path: Path, values: str) -> Path:
    text = yaml.safe_dump(minimal_spec(), sort_keys=False)
    text = text.replace("  draDriver:\n", f"  draDriver:\n    values:\n{values}", 1)
    path = tmp_path / "lab.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("values", "fragment"),
    [
        ("      key: !!binary aGVsbG8=\n", "!!binary"),
        ("      key: !!set {a, b}\n", "!!set"),
        ("      key: !!omap [a: 1]\n", "!!omap"),
    ],
    ids=["binary", "set", "omap"],
)
def test_yaml_tags_of_non_json_data_are_refused_alike_by_every_command(
    tmp_path: Path, values: str, fragment: str
) -> None:
    spec = _raw_spec(tmp_path, values)
    results = [
        _run("synth", str(spec), "--out", str(tmp_path / "out")),
        _run("check", str(spec)),
        _run("plan", str(spec)),
    ]
    assert [r.exit_code for r in results] == [2, 2, 2]
    assert len({r.stderr for r in results}) == 1
    assert f"{spec}:line " in results[0].stderr and fragment in results[0].stderr


def test_a_date_in_helm_values_stays_the_string_helm_reads(tmp_path: Path) -> None:
    spec = _raw_spec(tmp_path, "      since: 2024-05-01\n")
    out = tmp_path / "out"
    result = _run("synth", str(spec), "--out", str(out))
    assert result.exit_code == 0, result.output
    rendered = "\n".join(p.read_text() for p in (out / "lab").rglob("helmrelease_*.yaml"))
    rendered += "\n".join(p.read_text() for p in (out / "lab").rglob("application_*.yaml"))
    # Argo CD installs the DRA driver chart through a kustomize wrapper (helmCharts valuesInline)
    rendered += "\n".join(p.read_text() for p in (out / "lab").rglob("argocd/*/kustomization.yaml"))
    assert "since: '2024-05-01'" in rendered


def test_a_value_nested_3000_deep_from_python_is_refused_at_its_field(tmp_path: Path) -> None:
    stack = python_stack(
        tmp_path / "lab.py",
        body="deep = {}\nnode = deep\nfor _ in range(3000):\n    node['x'] = {}\n    node = node['x']\n"
        "doc['spec']['draDriver']['values'] = deep\n",
    )
    result = _run("synth", str(stack), "--out", str(tmp_path / "out"))
    assert result.exit_code == 2, result.output
    assert "draDriver.values" in result.stderr and "nested deeper than 64 levels" in result.stderr


def test_a_stack_raising_a_base_exception_is_reported_at_its_line(tmp_path: Path) -> None:
    stack = tmp_path / "lab.py"
    stack.write_text("class Quit(BaseException):\n    pass\n\nraise Quit('stop')\n")
    result = _run("synth", str(stack), "--out", str(tmp_path / "out"))
    assert result.exit_code == 2
    assert result.stderr == f"error: {stack}:line 4: the stack raised Quit: stop\n"


def test_a_full_disk_is_an_environment_failure_and_the_next_run_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gpuplatform.output.write as write

    spec, out = _spec(tmp_path), tmp_path / "out"

    def full(root: Path, files: Any, current: Path | None) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(root / "waves"))

    real = write._write_files
    monkeypatch.setattr(write, "_write_files", full)
    result = _run("synth", str(spec), "--out", str(out))
    assert result.exit_code == 74
    assert "No space left on device" in result.stderr and "internal" not in result.stderr
    assert sorted(p.name for p in out.iterdir()) == [".gpuplatform.lock"]
    monkeypatch.setattr(write, "_write_files", real)
    assert _run("synth", str(spec), "--out", str(out)).exit_code == 0


def _fifo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


def _cli(*args: str, timeout: float = 60, **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*_CLI, *args], capture_output=True, timeout=timeout, cwd=REPO, **kwargs)


@pytest.mark.parametrize("kind", ["fifo", "dev-zero-in-folder", "over-the-limit"])
def test_inventory_files_go_through_the_bounded_reader(tmp_path: Path, kind: str) -> None:
    # GIVEN an inventory that would block (FIFO), never end (/dev/zero) or exhaust memory
    if kind == "fifo":
        inventory = _fifo(tmp_path / "slices.json")
    elif kind == "dev-zero-in-folder":
        inventory = tmp_path / "slices"
        inventory.mkdir()
        (inventory / "zero.json").symlink_to("/dev/zero")
    else:
        inventory = tmp_path / "slices.json"
        with inventory.open("wb") as handle:
            handle.truncate(MAX_DATA_BYTES + 1)
    # WHEN check reads it / THEN it is refused at once, naming the file
    result = _cli("check", str(_spec(tmp_path)), "--inventory", str(inventory))
    assert result.returncode == 2, result.stderr
    assert b"is not a regular file" in result.stderr or b"over the limit" in result.stderr


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_python_stack_goes_through_the_bounded_reader_before_it_runs(tmp_path: Path, kind: str) -> None:
    stack = tmp_path / "lab.py"
    if kind == "fifo":
        _fifo(stack)
    else:
        stack.symlink_to("/dev/zero")
    result = _cli("synth", str(stack), "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    assert f"error: {stack}: is not a regular file".encode() in result.stderr


def test_snapshot_files_go_through_the_bounded_reader(tmp_path: Path) -> None:
    snapshot = tmp_path / "snap"
    (snapshot / "nvidia-smi").mkdir(parents=True)
    (snapshot / "pods.json").write_text('{"items": []}')
    _fifo(snapshot / "nvidia-smi" / "gpu_pod.csv")
    result = _cli("inventory", "nodes", str(snapshot))
    assert result.returncode == 2
    assert b"gpu_pod.csv: is not a regular file" in result.stderr


def test_sigint_exits_130(tmp_path: Path) -> None:
    stack = tmp_path / "slow.py"
    stack.write_text("import sys, time\nprint('started', file=sys.stderr, flush=True)\ntime.sleep(60)\n")
    proc = subprocess.Popen(
        [*_CLI, "synth", str(stack), "--out", str(tmp_path / "out")],
        stderr=subprocess.PIPE,
        cwd=REPO,
        preexec_fn=sigint_default,
    )
    assert proc.stderr is not None and proc.stderr.readline() == b"started\n"
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == 130
    assert proc.stderr.read() == b"error: interrupted\n"


def test_the_crash_variable_of_the_old_tests_is_ignored_in_production(tmp_path: Path) -> None:
    env = {**os.environ, "GPUPLATFORM_CRASH_AT": "writing"}
    result = _cli("synth", str(_spec(tmp_path)), "--out", str(tmp_path / "out"), env=env)
    assert result.returncode == 0, result.stderr


def test_closed_stdout_is_an_environment_failure(tmp_path: Path) -> None:
    result = subprocess.run(
        [*_CLI, "plan", str(_spec(tmp_path))],
        stdout=None,
        stderr=subprocess.PIPE,
        cwd=REPO,
        timeout=60,
        preexec_fn=lambda: os.close(1),
    )
    assert result.returncode == 74
    assert result.stderr == b"error: stdout: cannot print the result: it is closed\n"


def test_a_reader_that_goes_away_is_an_environment_failure(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [*_CLI, "plan", str(REPO / "stacks" / "reference.py")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    assert proc.wait(timeout=60) == 74
    assert b"error: stdout: the reader closed the pipe" in proc.stderr.read()


def test_a_spec_asking_for_a_huge_rendering_is_refused_quickly(tmp_path: Path) -> None:
    # GIVEN a spec of several MiB listing 100,000 nodes
    doc = minimal_spec()
    doc["spec"]["nodePools"][0]["nodes"] = [f"gpu-{i:06d}" for i in range(100_000)]
    spec = write_spec(tmp_path / "lab.yaml", doc)
    assert spec.stat().st_size > 1_000_000
    started = time.monotonic()
    # WHEN it is synthesised / THEN it is refused in seconds, naming the limit, and nothing is written
    result = _run("synth", str(spec), "--out", str(tmp_path / "out"))
    assert result.exit_code == 2
    assert "lists 100001 nodes; one cluster has at most 15000" in result.stderr
    assert time.monotonic() - started < 60
    assert not (tmp_path / "out").exists()


def test_other_objects_times_waves_beyond_the_file_limit_are_refused_before_rendering(tmp_path: Path) -> None:
    # GIVEN a spec within the node and wave limits whose claim templates render 690,000 files
    doc = minimal_spec()
    doc["spec"]["tenants"][0]["claimTemplates"] = [
        {"name": f"t-{i:05d}", "tier": "full"} for i in range(21_000)
    ]
    doc["spec"]["waves"][1:1] = [{"name": f"drain-{i}", "stage": "drain"} for i in range(28)]
    result = _run("synth", str(write_spec(tmp_path / "lab.yaml", doc)), "--out", str(tmp_path / "out"))
    assert result.exit_code == 2
    assert f"over the limit of {MAX_FILES} (what 15000 nodes render through 32 waves)" in result.stderr


@pytest.mark.parametrize("nodes", [14_998, 15_000])
def test_the_benchmark_fleet_reaches_the_node_limit(nodes: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN the benchmark fleet at the node limit (its files were refused from 14,998 nodes on)
    monkeypatch.setenv("FLEET_NODES", str(nodes))
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    import fleet

    platform = fleet.build()
    # THEN the one limit on a platform's size admits it
    assert sum(len(p.nodes) for p in platform.node_pools) == nodes
    assert size_errors(platform) == []


# --- 7. smaller --------------------------------------------------------------------------------


def test_convert_refuses_two_inputs_that_write_one_file(tmp_path: Path) -> None:
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "trainer.yaml").write_text(
            (REPO / "stacks" / "manifests" / "trainer.yaml").read_text()
        )
    out = tmp_path / "out"
    result = _run(
        "convert",
        str(tmp_path / "a" / "trainer.yaml"),
        str(tmp_path / "b" / "trainer.yaml"),
        "--tier",
        "gpu.nvidia.com",
        "--out",
        str(out),
    )
    assert result.exit_code == 2
    a, b = tmp_path / "a" / "trainer.yaml", tmp_path / "b" / "trainer.yaml"
    assert f"{a} and {b} would both write {out / 'trainer.yaml'}" in result.stderr
    assert not out.exists()


def test_convert_does_not_write_through_a_link_in_its_output_folder(tmp_path: Path) -> None:
    source = tmp_path / "trainer.yaml"
    source.write_text((REPO / "stacks" / "manifests" / "trainer.yaml").read_text())
    victim, out = tmp_path / "victim.txt", tmp_path / "out"
    victim.write_text("precious")
    out.mkdir()
    (out / "trainer.claimtemplates.yaml").symlink_to(victim)
    result = _run("convert", str(source), "--tier", "gpu.nvidia.com", "--out", str(out))
    assert result.exit_code == 2
    assert "is a symbolic link" in result.stderr
    assert victim.read_text() == "precious"
    assert sorted(p.name for p in out.iterdir()) == ["trainer.claimtemplates.yaml"], "nothing else written"


def test_init_does_not_write_through_a_link(tmp_path: Path) -> None:
    from tests.specs import healthy_cluster

    snapshot = healthy_cluster().write(tmp_path / "snap")
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (tmp_path / "spec.yaml").symlink_to(victim)
    result = _run("init", "--snapshot", str(snapshot), "--out", str(tmp_path / "spec.yaml"))
    assert result.exit_code == 2
    assert "is a symbolic link" in result.stderr
    assert victim.read_text() == "precious"


@pytest.mark.parametrize(
    "manifest", ["/etc/passwd", "../outside.yaml", "inside/../../outside.yaml", "link.yaml"]
)
def test_a_manifest_outside_the_stack_folder_is_refused(tmp_path: Path, manifest: str) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "outside.yaml").write_text((REPO / "stacks" / "manifests" / "trainer.yaml").read_text())
    (project / "link.yaml").symlink_to(tmp_path / "outside.yaml")
    workload = {"kind": "Deployment", "namespace": "team-a", "name": "t", "tier": "full", "movesIn": "claims"}
    doc = minimal_spec()
    doc["spec"]["workloads"] = [{**workload, "manifest": manifest}]
    result = _run("synth", str(write_spec(project / "lab.yaml", doc)), "--out", str(tmp_path / "out"))
    assert result.exit_code == 2, result.output
    assert "spec.workloads[0].manifest" in result.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", [["check", "--format", "json"], ["plan", "--format", "json"]])
def test_a_stack_that_prints_does_not_corrupt_json_output(tmp_path: Path, command: list[str]) -> None:
    stack = python_stack(tmp_path / "lab.py", body="print('hello from the stack')\n")
    result = _cli(command[0], str(stack), *command[1:])
    assert result.returncode in (0, 1), result.stderr
    json.loads(result.stdout)
    assert b"hello from the stack" in result.stderr


def _overlay(path: Path, spec: dict[str, Any]) -> Path:
    doc = {"apiVersion": "gpuplatform.dev/v1alpha1", "kind": "PlatformOverlay", "metadata": {}, "spec": spec}
    return write_spec(path, doc)


def test_an_overlay_naming_one_item_twice_is_refused_at_the_overlays_path(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    overlay = _overlay(
        tmp_path / "o.yaml",
        {"tiers": [{"name": "full", "description": "a"}, {"name": "full", "description": "b"}]},
    )
    result = _run("synth", str(spec), "--overlay", str(overlay), "--out", str(tmp_path / "out"))
    assert result.exit_code == 2, result.output
    assert f"error: {overlay}:spec.tiers[1].name:" in result.stderr
    assert "spec.tiers[0]" in result.stderr
    assert not (tmp_path / "out").exists()


def test_a_base_listing_one_item_twice_is_refused_even_when_an_overlay_merges_onto_it(tmp_path: Path) -> None:
    doc = minimal_spec()
    doc["spec"]["tiers"].append({"name": "full", "deviceType": "mig", "migProfile": "1g.10gb"})
    spec = write_spec(tmp_path / "lab.yaml", doc)
    overlay = _overlay(tmp_path / "o.yaml", {"tiers": [{"name": "full", "description": "staging"}]})
    result = _run("synth", str(spec), "--overlay", str(overlay), "--out", str(tmp_path / "out"))
    assert result.exit_code == 2, result.output
    assert f"error: {spec}:spec.tiers[1].name: 'full' is already defined at spec.tiers[0]" in result.stderr


def test_an_error_in_the_base_is_not_blamed_on_an_overlay_that_touches_the_same_list(tmp_path: Path) -> None:
    # GIVEN a base whose second tier is broken, and an overlay that only describes the first
    doc = minimal_spec()
    doc["spec"]["tiers"].append({"name": "small", "minMemory": "lots"})
    spec = write_spec(tmp_path / "lab.yaml", doc)
    overlay = _overlay(tmp_path / "o.yaml", {"tiers": [{"name": "full", "description": "staging"}]})
    # WHEN they are merged / THEN the error is the base's (Origin.locate: the base's own index)
    result = _run("synth", str(spec), "--overlay", str(overlay), "--out", str(tmp_path / "out"))
    assert result.exit_code == 2, result.output
    assert f"error: {spec}:spec.tiers[1].minMemory:" in result.stderr
    assert str(overlay) not in result.stderr
    # AND an overlay's own error is the overlay's, at the overlay's own index
    bad = _overlay(tmp_path / "bad.yaml", {"tiers": [{"name": "full", "minMemory": "40Gi\n"}]})
    result = _run("synth", str(_spec(tmp_path)), "--overlay", str(bad), "--out", str(tmp_path / "out"))
    assert result.exit_code == 2, result.output
    assert f"error: {bad}:spec.tiers[0].minMemory:" in result.stderr
    assert not (tmp_path / "out").exists()
