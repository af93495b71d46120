"""`gpuplatform import operator-values`: YAML specs edited round-trip, Python stacks given a values file."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from gpuplatform.charts.facts import chart_facts
from gpuplatform.cli import main
from gpuplatform.load.stacks import load_stack
from tests.adopt.helm_storage import write_captured
from tests.conftest import REPO
from tests.specs import minimal_spec, write_spec

RUNNING = """\
driver:
  version: 580.95.05
  manager:
    env:
    - name: ENABLE_AUTO_DRAIN
      value: "true"
toolkit:
  env:
  - name: CONTAINERD_SOCKET
    value: /run/containerd/containerd.sock
"""


def _invoke(*args: str) -> object:
    return CliRunner().invoke(main, ["import", "operator-values", *args])


def test_a_yaml_spec_gets_the_running_values_and_keeps_its_comments(tmp_path: Path) -> None:
    # GIVEN a spec with a comment that renders the operator release, and the output of `helm get values`
    doc = minimal_spec()
    doc["spec"]["gpuOperator"] = {"managed": True}
    spec = write_spec(tmp_path / "lab.yaml", doc)
    spec.write_text("# the lab cluster\n" + spec.read_text())
    (tmp_path / "running.yaml").write_text(RUNNING)
    # WHEN it is imported
    result = _invoke(
        str(tmp_path / "running.yaml"), "--stack", str(spec), "--release-name", "ops", "--namespace", "gpu"
    )
    assert result.exit_code == 0, result.output
    # THEN the release adopts the running one, the driver version moved to driverVersion
    assert spec.read_text().startswith("# the lab cluster\n")
    [loaded] = load_stack(spec)
    op = loaded.platform.gpu_operator
    assert (op.managed, op.release_name, op.namespace, op.driver_version) == (True, "ops", "gpu", "580.95.05")
    assert op.values["toolkit"]["env"][0]["name"] == "CONTAINERD_SOCKET"
    assert "version" not in op.values["driver"]
    # AND the rendered release carries them, merged with the platform's values
    from gpuplatform.plan.waves import plan_platform
    from gpuplatform.render.helm_values import gpu_operator_values

    plan = plan_platform(loaded.platform)
    values = gpu_operator_values(plan, plan.waves[0])
    assert values["driver"]["version"] == "580.95.05"
    assert [e["name"] for e in values["driver"]["manager"]["env"]] == [
        "ENABLE_AUTO_DRAIN",
        "NODE_LABEL_FOR_GPU_POD_EVICTION",
    ]


def test_an_unmanaged_operator_stays_unmanaged(tmp_path: Path) -> None:
    # GIVEN a spec that leaves the GPU Operator to its team (`managed: false`)
    doc = minimal_spec()
    doc["spec"]["gpuOperator"] = {"managed": False}
    spec = write_spec(tmp_path / "lab.yaml", doc)
    (tmp_path / "running.yaml").write_text(RUNNING)
    # WHEN the running values are imported
    result = _invoke(str(tmp_path / "running.yaml"), "--stack", str(spec))
    # THEN they are its values (the hand-off's base), and the decision is the spec's
    assert result.exit_code == 0, result.output
    assert "managed: false (as it was)" in result.output
    op = load_stack(spec)[0].platform.gpu_operator
    assert op.managed is False and op.values["toolkit"]["env"][0]["name"] == "CONTAINERD_SOCKET"


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("\nUSER-SUPPLIED VALUES:\n" + RUNNING, "USER-SUPPLIED VALUES"),  # the header, not first
        ("COMPUTED VALUES:\n" + RUNNING, "COMPUTED VALUES"),  # helm get values --all
    ],
    ids=["header-not-first", "computed-values"],
)
def test_a_line_that_is_not_a_value_is_refused(tmp_path: Path, text: str, key: str) -> None:
    spec = write_spec(tmp_path / "lab.yaml", minimal_spec())
    before = spec.read_text()
    (tmp_path / "running.yaml").write_text(text)
    result = _invoke(str(tmp_path / "running.yaml"), "--stack", str(spec))
    assert result.exit_code == 2  # type: ignore[attr-defined]
    assert f"error: {tmp_path / 'running.yaml'}:{key}: '{key}' is not a value of the chart" in result.stderr  # type: ignore[attr-defined]
    assert spec.read_text() == before


def test_the_header_of_helm_get_values_is_its_first_line(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "lab.yaml", minimal_spec())
    (tmp_path / "running.yaml").write_text("USER-SUPPLIED VALUES:\r\n" + RUNNING)
    assert _invoke(str(tmp_path / "running.yaml"), "--stack", str(spec)).exit_code == 0  # type: ignore[attr-defined]
    assert "USER-SUPPLIED VALUES" not in spec.read_text()


def test_a_snapshot_capture_names_the_release(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "lab.yaml", minimal_spec())
    captured = write_captured(tmp_path / "snap", "nvidia-ops", "gpu-system", {"mig": {"strategy": "mixed"}})
    result = _invoke(str(captured), "--stack", str(spec))
    assert result.exit_code == 0, result.output
    op = load_stack(spec)[0].platform.gpu_operator
    assert (op.release_name, op.namespace, op.values) == (
        "nvidia-ops",
        "gpu-system",
        {"mig": {"strategy": "mixed"}},
    )


def test_helm_get_values_all_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "lab.yaml", minimal_spec())
    before = spec.read_text()
    facts, _ = chart_facts("gpu-operator", "26.3.1")
    (tmp_path / "all.yaml").write_text(yaml.safe_dump(facts.defaults))
    result = _invoke(str(tmp_path / "all.yaml"), "--stack", str(spec))
    assert result.exit_code == 2
    assert "helm get values --all" in result.stderr
    assert spec.read_text() == before


def test_bad_input_names_the_file_and_writes_nothing(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "lab.yaml", minimal_spec())
    before = spec.read_text()
    (tmp_path / "bad.yaml").write_text("driver: [unclosed\n")
    result = _invoke(str(tmp_path / "bad.yaml"), "--stack", str(spec))
    assert result.exit_code == 2 and str(tmp_path / "bad.yaml") in result.stderr
    (tmp_path / "ok.yaml").write_text(RUNNING)
    result = _invoke(str(tmp_path / "ok.yaml"), "--stack", str(spec), "--namespace", "Not_A_Label")
    assert result.exit_code == 2 and "--namespace" in result.stderr
    assert spec.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.yaml", "lab.yaml", "ok.yaml"]


def test_a_python_stack_gets_a_values_file_and_the_lines_to_paste(tmp_path: Path) -> None:
    shutil.copytree(REPO / "stacks", tmp_path / "stacks")
    shutil.copytree(REPO / "overlays", tmp_path / "overlays")
    (tmp_path / "running.yaml").write_text(RUNNING)
    stack = tmp_path / "stacks" / "reference.py"
    result = _invoke(
        str(tmp_path / "running.yaml"),
        "--stack",
        str(stack),
        "--values-out",
        str(tmp_path / "stacks" / "values" / "gpu-operator.yaml"),
    )
    assert result.exit_code == 0, result.output
    assert "driver_version='580.95.05'" in result.stdout
    assert (
        "values=yaml.safe_load((Path(__file__).parent / 'values/gpu-operator.yaml').read_text())"
        in result.stdout
    )
    # the stack already loads that file: its platform now carries the imported values
    op = load_stack(stack)[0].platform.gpu_operator
    assert op.values["toolkit"]["env"][0]["value"] == "/run/containerd/containerd.sock"


def test_import_never_writes_through_a_link(tmp_path: Path) -> None:
    # GIVEN a spec reached through a link, and a values file name that is a link to a precious file
    (tmp_path / "running.yaml").write_text(RUNNING)
    real = write_spec(tmp_path / "real.yaml", minimal_spec())
    before = real.read_text()
    (tmp_path / "lab.yaml").symlink_to(real)
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me\n")
    shutil.copytree(REPO / "stacks", tmp_path / "stacks")
    shutil.copytree(REPO / "overlays", tmp_path / "overlays")
    link = tmp_path / "stacks" / "values" / "linked.yaml"
    link.symlink_to(precious)
    # WHEN either is the target of an import
    through_spec = _invoke(str(tmp_path / "running.yaml"), "--stack", str(tmp_path / "lab.yaml"))
    through_values = _invoke(
        str(tmp_path / "running.yaml"),
        "--stack",
        str(tmp_path / "stacks" / "reference.py"),
        "--values-out",
        str(link),
    )
    # THEN both are refused as bad input, naming the link, and nothing behind a link changed
    assert through_spec.exit_code == 2
    assert f"error: {tmp_path / 'lab.yaml'}:" in through_spec.stderr
    assert through_values.exit_code == 2
    assert "symbolic link" in through_values.stderr
    assert real.read_text() == before
    assert precious.read_text() == "keep me\n"


def test_imported_values_keep_their_meaning_as_helm_reads_them(tmp_path: Path) -> None:
    # GIVEN running values with strings YAML 1.1 or 1.2 would read as other types, and such numbers
    spec = write_spec(tmp_path / "lab.yaml", minimal_spec())
    running = (
        'daemonsets:\n  annotations:\n    when: 10:30\n    flag: "yes"\n    short: "y"\n    mode: "0o17"\n'
        '    size: "1e3"\n    octal: 017\n    on: "on"\n'
    )
    (tmp_path / "running.yaml").write_text(running)
    # WHEN they are imported into a YAML spec
    result = _invoke(str(tmp_path / "running.yaml"), "--stack", str(spec))
    assert result.exit_code == 0, result.output
    # THEN the spec holds them as Helm reads the running values: no 630, no true for "yes"
    [loaded] = load_stack(spec)
    assert loaded.platform.gpu_operator.values["daemonsets"]["annotations"] == {
        "when": "10:30",
        "flag": "yes",
        "short": "y",
        "mode": "0o17",
        "size": "1e3",
        "octal": 15,
        "true": "on",
    }


def test_import_keeps_the_specs_mode_and_owner(tmp_path: Path) -> None:
    # GIVEN a spec readable by its group only, owned by another group (as root: another user too)
    spec = write_spec(tmp_path / "lab.yaml", minimal_spec())
    spec.chmod(0o640)
    owner = (1234, 5678) if os.geteuid() == 0 else (os.getuid(), os.getgid())
    if os.geteuid() == 0:
        os.chown(spec, *owner)
    (tmp_path / "running.yaml").write_text(RUNNING)
    # WHEN the running values are imported
    result = _invoke(str(tmp_path / "running.yaml"), "--stack", str(spec))
    assert result.exit_code == 0, result.output
    # THEN the edited spec has the same permission bits and owner
    info = spec.stat()
    assert stat.S_IMODE(info.st_mode) == 0o640
    assert (info.st_uid, info.st_gid) == owner


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("name", "../../.github/workflows/ci"),
        ("name", "/etc/cron.d/x"),
        ("namespace", "../gpu"),
        ("chart", "gpu-operator/../../x"),
    ],
)
@pytest.mark.parametrize("stack_kind", ["yaml", "python"])
def test_a_captured_release_name_is_a_name_not_a_path(
    tmp_path: Path, field: str, value: str, stack_kind: str
) -> None:
    # GIVEN a captured release whose name (or namespace, or chart) is a path (issue 39 H4)
    captured = write_captured(tmp_path / "snap", "ops", "gpu", {"mig": {"strategy": "mixed"}})
    doc = json.loads(captured.read_text())
    captured.write_text(json.dumps({**doc, field: value}))
    if stack_kind == "yaml":
        stack = write_spec(tmp_path / "lab.yaml", minimal_spec())
    else:
        shutil.copytree(REPO / "stacks", tmp_path / "stacks")
        shutil.copytree(REPO / "overlays", tmp_path / "overlays")
        stack = tmp_path / "stacks" / "reference.py"
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    # WHEN it is imported
    result = _invoke(str(captured), "--stack", str(stack))
    # THEN it is refused at its field, and nothing is written anywhere
    assert result.exit_code == 2, result.output
    assert f"error: {captured}:{field}: {value!r} is not a Helm release's {field}" in result.stderr
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before
