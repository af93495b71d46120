"""Specs read scalars as Helm and Kubernetes read them (go-yaml v2), not as PyYAML's YAML 1.1."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpuplatform.commands.synth import render_trees
from gpuplatform.errors import InputError
from gpuplatform.load.schema import spec_schema
from gpuplatform.load.stacks import load_stack
from gpuplatform.load.yaml_input import parse_yaml
from tests.realtools.conftest import releases
from tests.specs import minimal_spec, write_spec

#: (plain scalar, what Helm reads; checked against `helm template` in tests/realtools/test_yaml_as_helm.py)
TABLE: list[tuple[str, Any]] = [
    ("10:30", "10:30"),
    ("190:20:30.15", "190:20:30.15"),
    ("2026-12-04", "2026-12-04"),
    ("yes", True),
    ("y", True),
    ("Off", False),
    ("n", False),
    ("0o17", 15),
    ("017", 15),
    ("0x1F", 31),
    ("0b101", 5),
    ("1_000", 1000),
    ("1e3", 1000.0),
    ("08", 8.0),
    ("0o8", "0o8"),
    ("=", "="),
    ("<<", "<<"),
    ("~", None),
    ("", None),
    ("18446744073709551615", 18446744073709551615),
    ("18446744073709551616", 1.8446744073709552e19),
    ("1e400", "1e400"),
]


@pytest.mark.parametrize(("text", "expected"), TABLE, ids=[t or "empty" for t, _ in TABLE])
def test_a_plain_scalar_reads_as_helm_reads_it(text: str, expected: Any) -> None:
    value = parse_yaml(f"a: {text}\n", "spec.yaml")["a"]
    assert value == expected and type(value) is type(expected)


def test_mapping_keys_are_strings_as_helm_makes_them() -> None:
    assert list(parse_yaml("y: 1\n017: 2\n1e3: 3\n0.1: 4\n", "f")) == ["true", "15", "1000", "0.1"]


def test_a_key_beyond_float32_is_the_infinity_helm_names() -> None:
    """helm v4.1.4 renders `{1E40: 2, -1E40: 1}` as `{".inf": 2, "-.inf": 1}` (found by hypothesis:
    `1E100` as a key was an internal error)."""
    assert list(parse_yaml("1E40: 2\n-1E40: 1\n", "f")) == [".inf", "-.inf"]


@pytest.mark.parametrize("text", ["!!int x", "!!bool maybe", "!!float 1x"])
def test_what_helm_cannot_read_is_refused_with_its_place(text: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_yaml(f"a: {text}\n", "spec.yaml")
    assert "spec.yaml:line 1 column 4" in str(caught.value)


def test_helm_values_in_a_spec_render_as_written(tmp_path: Path) -> None:
    # GIVEN `values: {at: 10:30}` in a spec (YAML 1.1 reads 630)
    doc = minimal_spec()
    doc["spec"]["draDriver"]["values"] = {"kubeletPlugin": {"podAnnotations": {"at": "__AT__"}}}
    spec = write_spec(tmp_path / "lab.yaml", doc)
    spec.write_text(spec.read_text().replace("__AT__", "10:30"))
    # WHEN it is loaded and rendered
    (loaded,) = load_stack(spec)
    tree = render_trees([loaded])[loaded.platform.name]
    # THEN every release carries the string 10:30
    values = [r[5] for r in releases(tree) if "dra" in r[1]]
    assert values and all(v["kubeletPlugin"]["podAnnotations"] == {"at": "10:30"} for v in values)


def test_the_schema_says_how_a_spec_is_read() -> None:
    assert "10:30" in spec_schema()["description"] and "Helm" in spec_schema()["description"]
