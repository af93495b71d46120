"""Property-based: random YAML and random partial specs end in success or a clean refusal, never a crash."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuplatform.cli import main
from gpuplatform.errors import InputError
from gpuplatform.load.yaml_input import parse_yaml_documents
from tests.specs import minimal_spec

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_YAML_ALPHABET = st.sampled_from([*"ab:-[]{},&*!|>'\"#%@`?\n \t\\0123456789.", "\x00", "\ufeff", "é", "<<"])
_yaml_text = st.lists(_YAML_ALPHABET, max_size=200).map("".join)

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(["../x", "/etc", "a" * 300, "1.36.1", "gpu", "", "dra", "Hopper", "40Gi"]),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=12,
)


@SETTINGS
@given(_yaml_text)
def test_random_yaml_parses_or_is_an_input_error(text: str) -> None:
    try:
        parse_yaml_documents(text, "random.yaml")
    except InputError as exc:
        assert exc.problems and all(p.file == "random.yaml" for p in exc.problems)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out += _paths(value, (*prefix, i))
    return out


@st.composite
def _partial_specs(draw: st.DrawFn) -> Any:
    """The minimal spec with a few random deletions and replacements anywhere in it."""
    doc: Any = minimal_spec()
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        paths = _paths(doc)
        path = draw(st.sampled_from(paths))
        if not path:
            doc = draw(_values)
            continue
        parent: Any = doc
        for part in path[:-1]:
            parent = parent[part]
        if draw(st.booleans()) and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(_values)
    return doc


@SETTINGS
@given(_partial_specs())
def test_random_partial_specs_synthesise_or_are_refused_cleanly(doc: Any) -> None:
    # GIVEN a randomly damaged spec file
    root = Path(tempfile.mkdtemp())
    try:
        spec, out = root / "lab.yaml", root / "out"
        spec.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), encoding="utf-8")
        # WHEN it is synthesised and checked
        result = CliRunner().invoke(main, ["synth", str(spec), "--out", str(out)])
        checked = CliRunner().invoke(main, ["check", str(spec), "--format", "json"])
        # THEN each either succeeded, or was refused (bad input or policy) with error lines; a refused
        # synth wrote nothing
        for run in (result, checked):
            assert run.exit_code in (0, 1, 2), run.output
            assert "Traceback" not in run.output and "error: internal" not in run.stderr
            if run.exit_code == 2:
                assert run.stderr.startswith("error: ")
        if result.exit_code != 0:
            assert "error: " in result.stderr
            assert not out.exists()
    finally:
        shutil.rmtree(root)


def _overlay(spec: Any) -> dict[str, Any]:
    return {"apiVersion": "gpuplatform.dev/v1alpha1", "kind": "PlatformOverlay", "metadata": {}, "spec": spec}


@SETTINGS
@given(
    st.dictionaries(
        st.sampled_from(
            ["nodePools", "tiers", "waves", "tenants", "kubernetes", "draDriver", "activeWave", "x"]
        ),
        _values,
        max_size=3,
    )
)
def test_random_overlays_merge_or_are_refused_cleanly(spec: Any) -> None:
    root = Path(tempfile.mkdtemp())
    try:
        base, overlay = root / "lab.yaml", root / "overlay.yaml"
        base.write_text(yaml.safe_dump(minimal_spec(), sort_keys=False), encoding="utf-8")
        overlay.write_text(
            yaml.safe_dump(_overlay(spec), sort_keys=False, allow_unicode=True), encoding="utf-8"
        )
        result = CliRunner().invoke(main, ["check", str(base), "--overlay", str(overlay)])
        assert result.exit_code in (0, 1, 2), result.output
        assert "Traceback" not in result.output and "error: internal" not in result.stderr
    finally:
        shutil.rmtree(root)


@SETTINGS
@given(_values, st.sampled_from(["inventory", "snapshot"]))
def test_random_inventories_and_snapshots_are_read_or_refused_cleanly(doc: Any, kind: str) -> None:
    root = Path(tempfile.mkdtemp())
    try:
        spec = root / "lab.yaml"
        spec.write_text(yaml.safe_dump(minimal_spec(), sort_keys=False), encoding="utf-8")
        if kind == "inventory":
            (root / "slices.yaml").write_text(yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8")
            args = ["--inventory", str(root / "slices.yaml")]
        else:
            (root / "snap").mkdir()
            (root / "snap" / "nodes.json").write_text(
                yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8"
            )
            args = ["--snapshot", str(root / "snap")]
        result = CliRunner().invoke(main, ["check", str(spec), *args])
        assert result.exit_code in (0, 1, 2), result.output
        assert "Traceback" not in result.output and "error: internal" not in result.stderr
    finally:
        shutil.rmtree(root)
