"""The one dumper: deterministic block YAML, literal multi-line strings, no wrapping, no aliases."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuplatform.load.stacks import load_stack
from gpuplatform.output import yaml as yaml_module
from gpuplatform.output.yaml import dump_documents, dump_many, dump_yaml
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.tree import render_tree
from tests.conftest import REPO


def test_block_style_insertion_order_and_literal_blocks() -> None:
    text = dump_yaml({"z": 1, "a": {"script": "set -e\nkubectl get nodes\n"}, "t": "true"})
    assert text == "z: 1\na:\n  script: |\n    set -e\n    kubectl get nodes\nt: 'true'\n"


def test_long_lines_are_never_wrapped_and_shared_objects_never_aliased() -> None:
    shared = {"k": "v"}
    text = dump_yaml({"expr": "x && " * 100, "a": shared, "b": shared})
    assert "&id" not in text and "*id" not in text
    assert len(text.splitlines()[0]) > 400


def test_documents_are_separated() -> None:
    assert dump_documents([{"a": 1}, {"b": 2}]) == "a: 1\n---\nb: 2\n"


def test_no_other_module_dumps_yaml() -> None:
    offenders = []
    for path in (REPO / "gpuplatform").rglob("*.py"):
        if path == REPO / "gpuplatform" / "output" / "yaml.py" or "convert" in path.parts:
            continue
        if re.search(r"\byaml\.(safe_)?dump(_all)?\(", path.read_text()):
            offenders.append(str(Path(path).relative_to(REPO)))
    assert offenders == []


def test_dump_many_equals_one_dump_per_object() -> None:
    objects = [{"a": "x\n---\ny\n"}, {"b": ["---", "- c"]}, {"c": {"d": "---"}}]
    assert dump_many(objects) == [dump_yaml(o) for o in objects]
    assert dump_many([]) == []


_SCALARS = (
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
    | st.sampled_from(["", " x", "x ", "a: b", "- x", "#c", "yes", "0o17", "1e3", "a\n", "a\n\n", " a\nb"])
    | st.integers()
    | st.booleans()
    | st.none()
    | st.floats()
)
_DATA = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6) | st.integers(), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=400)
@given(_DATA)
def test_the_fast_node_builder_writes_what_the_representer_writes(data: object) -> None:
    # GIVEN any plain data (and floats, which the representer handles)
    # WHEN it is dumped with the direct node builder and with PyYAML's representer
    # THEN the texts are the same
    assert _dump(data, yaml_module._FastDumper) == _dump(data, yaml_module._Dumper)


@pytest.mark.parametrize("stack", ["reference.py", "nim-lab.yaml", "mixed-fleet.yaml"])
def test_every_rendered_object_of_the_stacks_is_written_as_the_representer_writes_it(stack: str) -> None:
    objects = [
        obj
        for loaded in load_stack(REPO / "stacks" / stack)
        for content in render_tree(plan_platform(loaded.platform)).files.values()
        if isinstance(content, list)
        for obj in content
    ]
    assert objects
    assert _dump(objects, yaml_module._FastDumper) == _dump(objects, yaml_module._Dumper)


def _dump(data: object, dumper: type) -> str:
    return yaml.dump(
        data, Dumper=dumper, sort_keys=False, default_flow_style=False, width=1 << 30, allow_unicode=True
    )
