"""Output every YAML reader reads the same: YAML 1.1 (PyYAML), YAML 1.2 (ruamel.yaml in 1.2 mode) and
go-yaml (kustomize, as Argo CD and Flux run it) all read each string we write as that string."""

from __future__ import annotations

import io
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from gpuplatform.commands.synth import render_files
from gpuplatform.load.stacks import LoadedPlatform, load_stack
from gpuplatform.output.serialize import Serializer
from gpuplatform.output.yaml import dump_yaml, needs_quotes
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.meta import k8s_object
from gpuplatform.render.tree import Tree, render_tree, shared_files
from tests.specs import minimal_spec, write_spec

#: Strings some reader resolves to a non-string: YAML 1.1 bools (y/n too), 1.2 octal and exponent
#: floats, go-yaml's underscores, binary and timestamps with one-digit months.
TRICKY = [
    "y", "Y", "n", "N", "yes", "No", "on", "OFF", "true", "False", "null", "NULL", "~",
    "123", "0123", "1e3", "1e-3", "1E3", "0o17", "0x1f", "0b101", "1_000", "0e0", "6e1",
    ".5", "1.5", "1.5e3", "+1", "-1", ".inf", "-.inf", ".NaN", "2001-1-2", "2001-01-01", "12:30",
    "=", "<<",
]  # fmt: skip
PLAIN = ["lab", "gpu-01", "a1", "1a", "e3", "1.2.3", "nan", "inf", "0x", "08a", "yesterday", "n-1"]


def _ruamel_12() -> YAML:
    reader = YAML(typ="safe", pure=True)
    reader.version = (1, 2)
    return reader


def _read_all(text: str) -> tuple[list[Any], list[Any]]:
    """The documents of `text` as YAML 1.2 (ruamel) and YAML 1.1 (PyYAML) read them."""
    return list(_ruamel_12().load_all(io.StringIO(text))), list(yaml.safe_load_all(text))


@pytest.mark.parametrize("value", TRICKY)
def test_strings_other_readers_resolve_are_quoted(value: str) -> None:
    assert needs_quotes(value)
    text = dump_yaml({"k": value, value: "v"})
    assert _read_all(text) == ([{"k": value, value: "v"}], [{"k": value, value: "v"}])


@pytest.mark.parametrize("value", PLAIN)
def test_ordinary_strings_stay_plain(value: str) -> None:
    assert not needs_quotes(value)
    assert dump_yaml({"k": value}) == f"k: {value}\n"


_LABEL_CHARS = st.sampled_from("abcxyz019-")
_dns_labels = st.one_of(
    st.sampled_from([t for t in TRICKY if t[0].isalnum() and t.replace("-", "").isalnum() and t.islower()]),
    st.text(_LABEL_CHARS, min_size=1, max_size=12).filter(lambda s: s[0] != "-" and s[-1] != "-"),
)
_label_values = st.one_of(
    st.sampled_from(
        [
            t
            for t in TRICKY
            if t[0].isalnum() and t[-1].isalnum() and t.replace("_", "").replace(".", "").isalnum()
        ]
    ),
    st.text(st.sampled_from("aYn0159_.-eE"), min_size=1, max_size=10).filter(
        lambda s: s[0].isalnum() and s[-1].isalnum()
    ),
)
_scalars = st.one_of(
    st.sampled_from(TRICKY + PLAIN), st.text(max_size=12), st.integers(), st.booleans(), st.none()
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(TRICKY + PLAIN), inner, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(
    names=st.lists(_dns_labels, min_size=2, max_size=2),
    namespace=_dns_labels,
    wave=_dns_labels,
    labels=st.dictionaries(st.sampled_from(["a", "b/c", "x.io/y"]), _label_values, max_size=3),
    values=st.dictionaries(st.sampled_from(TRICKY + PLAIN), _values, max_size=4),
)
def test_random_names_and_values_read_back_the_same_in_yaml_1_2_and_1_1(
    names: list[str], namespace: str, wave: str, labels: dict[str, str], values: dict[str, Any]
) -> None:
    # GIVEN objects that share one template (masked name, namespace and wave label) and free values
    serializer = Serializer("1.36", validate=False)
    objects = [
        k8s_object("v1", "ConfigMap", name, wave=wave, namespace=namespace, labels=labels, data={"v": values})
        for name in names
    ]
    # WHEN they are dumped / THEN YAML 1.2 and YAML 1.1 readers both read back exactly the objects
    for obj in objects:
        text, _ = serializer.dump(obj)
        assert _read_all(text) == ([obj], [obj])


def _rendered(
    tmp_path: Path, wave: str, tenant: str, namespace: str, owner: str
) -> tuple[LoadedPlatform, Tree]:
    """The minimal spec with its third wave, its tenant, namespace and owner label renamed, rendered."""
    doc = minimal_spec()
    doc["spec"]["waves"][2].update(name=wave, tenants=[tenant])
    doc["spec"]["activeWave"] = wave
    doc["spec"]["tenants"][0].update(name=tenant, namespace=namespace, owner=owner)
    [loaded] = load_stack(write_spec(tmp_path / "lab.yaml", doc))
    return loaded, render_tree(plan_platform(loaded.platform))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(wave=_dns_labels, tenant=_dns_labels, namespace=_dns_labels, owner=_label_values)
def test_a_rendered_platform_reads_back_the_same_in_yaml_1_2(
    tmp_path: Path, wave: str, tenant: str, namespace: str, owner: str
) -> None:
    # GIVEN a spec whose wave, tenant, namespace and owner label are random (often numeric-looking)
    if wave in {"base", "pilot", "cutover"} or namespace in {"nvidia-dra-driver-gpu", "gpuplatform-gates"}:
        return
    loaded, tree = _rendered(tmp_path, wave, tenant, namespace, owner)
    # WHEN it is rendered / THEN every file reads back, in YAML 1.2, as the objects rendered
    files = render_files(loaded, tree=tree)
    for path, content in tree.files.items():
        if isinstance(content, list):
            assert list(_ruamel_12().load_all(io.StringIO(files[path].decode()))) == content, path


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl (kustomize, go-yaml)")
@pytest.mark.parametrize(
    ("wave", "tenant", "namespace", "owner"),
    [("123", "1e3", "0o17", "Yes"), ("y", "0x1f", "1-000", "N"), ("n", "6e1", "0b101", "1_000")],
)
def test_kustomize_reads_every_rendered_object_as_we_wrote_it(
    tmp_path: Path, wave: str, tenant: str, namespace: str, owner: str
) -> None:
    # GIVEN a wave whose names go-yaml would read as numbers or booleans if they were plain
    loaded, tree = _rendered(tmp_path, wave, tenant, namespace, owner)
    folder = f"waves/02-{wave}/"
    out = tmp_path / "out"
    for path, data in render_files(loaded, tree=tree).items():
        (out / path).parent.mkdir(parents=True, exist_ok=True)
        (out / path).write_bytes(data)
    # WHEN kustomize (go-yaml) builds the wave folder
    built = subprocess.run(
        ["kubectl", "kustomize", str(out / folder)], capture_output=True, text=True, timeout=120, check=True
    )
    # THEN every object it emits equals the object we rendered (no name, label or namespace
    # turned into a number or a boolean)
    named = {
        shared for path in tree.files if path.startswith(folder) for shared in shared_files(tree.files, path)
    }
    ours = {
        (o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): o
        for path, content in tree.files.items()
        if (path.startswith(folder) or path in named) and isinstance(content, list)
        for o in content
        if o["kind"] != "Kustomization"
    }
    theirs = {
        (o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): o
        for o in yaml.safe_load_all(built.stdout)
    }
    assert set(theirs) <= set(ours) and theirs
    for key, obj in theirs.items():
        assert obj == ours[key], key
