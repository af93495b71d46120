"""Specs read scalars as Helm reads them, and a team's Helm values reach Helm unchanged (issue 26, item 6)."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuplatform.commands.synth import render_trees
from gpuplatform.load.stacks import load_stack
from gpuplatform.load.yaml_input import parse_yaml
from gpuplatform.output.yaml import dump_yaml
from tests.realtools.conftest import Helm, chart_folder, releases
from tests.specs import minimal_spec

#: Plain scalars whose reading differs between YAML 1.1 (PyYAML), YAML 1.2 and go-yaml v2.
SCALARS = [
    "10:30",
    "1:2:3",
    "190:20:30.15",
    "-1:30",
    "yes",
    "Yes",
    "NO",
    "on",
    "Off",
    "y",
    "Y",
    "n",
    "N",
    "true",
    "False",
    "~",
    "null",
    "Null",
    "",
    "0o17",
    "0O17",
    "0o8",
    "017",
    "08",
    "09.5",
    "0x1F",
    "-0x1F",
    "0b101",
    "-0b101",
    "1_000",
    "0x_1F",
    "+12",
    "-0",
    "00",
    "1e3",
    "12e03",
    "1E+3",
    "1.5e+3",
    ".5",
    ".5e1",
    "0.",
    "1.",
    "+.5",
    "2026-12-04",
    "2026-12-04T10:30:00Z",
    "2026-1-2",
    "=",
    "<<",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775809",
    "18446744073709551615",
    "18446744073709551616",
    "1e400",
    "0x",
    "+",
    ".",
    "._5",
    "1__0",
    "_1",
    "0b2",
    "0xG",
    "1e",
    "3:25:45",
    "12:30:00.5",
    "0.1_2",
]


def _echo_chart(tmp_path: Path) -> Path:
    chart = tmp_path / "echo"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: echo\nversion: 0.1.0\n")
    (chart / "templates" / "values.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: echo}\ndata:\n  values: {{ .Values | toJson | quote }}\n"
    )
    return chart


def _helm_reads(helm: Helm, chart: Path, text: str, tmp_path: Path) -> Any:
    values = tmp_path / "values.yaml"
    values.write_text(text)
    done = subprocess.run(
        [helm.binary, "template", "echo", str(chart), "-f", str(values)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(yaml.safe_load(done.stdout)["data"]["values"])


def _kind(value: Any) -> Any:
    """A JSON value as Helm's toJson can tell it: numbers are numbers, whatever their Go type."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return ("number", float(value))
    if isinstance(value, dict):
        return {k: _kind(v) for k, v in value.items()}
    return [_kind(v) for v in value]


def test_every_plain_scalar_reads_as_helm_reads_it(helm: Helm, tmp_path: Path) -> None:
    # GIVEN the scalars YAML 1.1, YAML 1.2 and go-yaml v2 disagree on, as Helm values
    finite = [s for s in SCALARS if s != "1e400"]
    text = "".join(f"k{i}: {s}\n" for i, s in enumerate(finite))
    # WHEN Helm and the spec loader read them / THEN each value is alike
    by_helm = _helm_reads(helm, _echo_chart(tmp_path), text, tmp_path)
    ours = parse_yaml(text, "values.yaml")
    differ = {
        s: (ours[f"k{i}"], by_helm[f"k{i}"])
        for i, s in enumerate(finite)
        if _kind(ours[f"k{i}"]) != _kind(by_helm[f"k{i}"])
    }
    assert differ == {}


def test_keys_become_strings_as_helm_makes_them(helm: Helm, tmp_path: Path) -> None:
    keys = [
        "y",
        "no",
        "017",
        "0x1F",
        "2026-12-04",
        "10:30",
        "1e3",
        "1.5",
        "0.1",
        "1e6",
        "123456.7",
        "1e-5",
        "-0.0001",
        "08",
    ]
    text = "".join(f"{key}: {i}\n" for i, key in enumerate(keys))
    ours = parse_yaml(text, "values.yaml")
    assert ours == _helm_reads(helm, _echo_chart(tmp_path), text, tmp_path)


@pytest.mark.parametrize("scalar", [".inf", "-.Inf", "+.INF", ".nan", "1e400"])
def test_what_json_cannot_hold_is_refused_by_both(helm: Helm, tmp_path: Path, scalar: str) -> None:
    values = tmp_path / "values.yaml"
    values.write_text(f"a: {scalar}\n")
    done = subprocess.run(
        [helm.binary, "template", "echo", str(_echo_chart(tmp_path)), "-f", str(values)],
        capture_output=True,
        text=True,
    )
    if scalar == "1e400":  # go-yaml v2 keeps what ParseFloat refuses as a string
        assert parse_yaml(values.read_text(), "v") == {"a": "1e400"}
        return
    assert done.returncode != 0
    assert not math.isfinite(parse_yaml(values.read_text(), "v")["a"])  # the model refuses it at its field


#: A team's Helm values as they hand them to Helm, with every scalar YAML 1.1 would read otherwise.
TEAM_VALUES = """\
kubeletPlugin:
  podAnnotations:
    example.com/window: 10:30
    example.com/span: 1:2:3
    example.com/day: 2026-12-04
    example.com/mode: 0o17
    example.com/octal: 017
    example.com/padded: 08
    example.com/size: 1e3
    example.com/enabled: yes
    example.com/short: y
    example.com/off: off
    example.com/quoted: "yes"
    example.com/blank: ""
    example.com/tilde: ~
"""


def _spec_with_values(path: Path, values: str) -> Path:
    doc = minimal_spec()
    doc["spec"]["draDriver"]["values"] = "__VALUES__"
    text = yaml.safe_dump(doc, sort_keys=False)
    indent = " " * 6
    block = "\n" + "".join(f"{indent}{line}\n" for line in values.splitlines())
    path.write_text(text.replace(" __VALUES__\n", block))
    return path


def test_a_teams_helm_values_reach_helm_byte_for_byte(helm: Helm, tmp_path: Path) -> None:
    # GIVEN a spec holding the team's Helm values for the DRA driver, word for word
    spec = _spec_with_values(tmp_path / "lab.yaml", TEAM_VALUES)
    (loaded,) = load_stack(spec)
    tree = render_trees([loaded])[loaded.platform.name]
    _, chart, version, release, namespace, values = next(r for r in releases(tree) if "dra" in r[1])
    folder = chart_folder(chart, version)
    assert folder is not None, (chart, version)
    rendered = tmp_path / "rendered.yaml"
    rendered.write_text(dump_yaml(values))
    (tmp_path / "team.yaml").write_text(TEAM_VALUES)

    # WHEN helm renders the chart from the tool's values, and from them with the team's own file on top
    def template(*files: str) -> str:
        args = [
            helm.binary,
            "template",
            release,
            str(folder),
            "--namespace",
            namespace,
            "--kube-version",
            "1.36.0",
        ]
        for name in files:
            args += ["-f", str(tmp_path / name)]
        return subprocess.run(args, capture_output=True, text=True, check=True).stdout

    # THEN the team's file changes no byte: every value reached Helm as Helm reads the team's file
    through_spec = template("rendered.yaml")
    assert 'example.com/window: "10:30"' in through_spec or "example.com/window: '10:30'" in through_spec
    assert through_spec == template("rendered.yaml", "team.yaml")
