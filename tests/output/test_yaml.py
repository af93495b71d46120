"""The one dumper: deterministic block YAML, literal multi-line strings, no wrapping, no aliases."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from hypothesis import example, given, settings
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
def test_any_data_is_written_as_the_representer_writes_it(data: object) -> None:
    # GIVEN any data: plain, or with floats and integer keys, which the direct writer leaves to PyYAML
    # WHEN it is dumped
    # THEN the text is PyYAML's
    assert dump_yaml(data) == _dump(data, yaml_module._Dumper)


@pytest.mark.parametrize("stack", ["reference.py", "nim-lab.yaml", "mixed-fleet.yaml"])
def test_every_rendered_object_of_the_stacks_is_written_directly_as_the_representer_writes_it(
    stack: str,
) -> None:
    objects = [
        obj
        for loaded in load_stack(REPO / "stacks" / stack)
        for content in render_tree(plan_platform(loaded.platform)).files.values()
        if isinstance(content, list)
        for obj in content
    ]
    assert objects
    # the direct writer writes each object, none left to PyYAML, as PyYAML does
    assert [yaml_module._emit(o) for o in objects] == [_dump(o, yaml_module._Dumper) for o in objects]


#: Text that exercises every choice of scalar style: indicators first and inside, `: ` and ` #`,
#: spaces at either end, document markers, words and numbers other readers resolve, quotes,
#: tabs, line breaks (trailing, doubled, after a space), Unicode and control characters.
_TRICKY = st.text(
    st.sampled_from(list("aZ09 :#-?,[]{}&*!|>'\"%@`.~=+/_\t\n\r\x85\u2028é€\x00\x7f\ufeff")), max_size=10
) | st.sampled_from(
    [
        "",
        "---",
        "...",
        "--- x",
        "- x",
        "-x",
        "? x",
        ":x",
        "x:",
        "a: b",
        "a #b",
        "a#b",
        "y",
        "NO",
        "~",
        "null",
        "0x1F",
        "1_000",
        "1e3",
        ".5",
        "2024-1-2",
        "=",
        "<<",
        "a\n",
        "a\n\n",
        " a\nb",
        "a \nb",
        "\na",
        "x" * 130,
    ]
)
_PLAIN = st.recursive(
    _TRICKY | st.integers() | st.booleans() | st.none(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TRICKY, inner, max_size=4),
    max_leaves=24,
)


@settings(max_examples=1000, derandomize=True)
@given(st.dictionaries(_TRICKY, _PLAIN, min_size=1, max_size=5))
@example({"0": "\n0\u2028"})  # a literal block holding another line break: left to PyYAML
def test_the_direct_writer_writes_what_pyyaml_writes(data: dict[str, object]) -> None:
    # GIVEN any mapping of plain data, with keys and strings of every style
    # WHEN the direct writer writes it (or leaves it to PyYAML: a key that is not a simple key)
    text = yaml_module._emit(data)
    # THEN it is PyYAML's text; PyYAML is left only keys it writes as complex keys (`? key`),
    # literal blocks that keep their final line breaks (after which libyaml ends the document)
    # and strings with other line breaks than LF (quoted over lines, indented by their context)
    expected = _dump(data, yaml_module._Dumper)
    assert (text if text is not None else dump_yaml(data)) == expected
    keys, strings = _strings(data)
    if all(0 < len(k) <= 100 and not set(k) & _BREAKS for k in keys) and not any(
        _kept(s) or set(s) & (_BREAKS - {"\n"}) for s in strings
    ):
        assert text is not None


_BREAKS = set("\r\n\x85\u2028\u2029")


def _kept(value: str) -> bool:
    return value[-1:] in _BREAKS and (len(value) == 1 or value[-2] in _BREAKS)


def _strings(data: object) -> tuple[list[str], list[str]]:
    """Every key and every string value in `data`."""
    if isinstance(data, str):
        return [], [data]
    keys: list[str] = list(data) if isinstance(data, dict) else []
    strings: list[str] = []
    for value in data.values() if isinstance(data, dict) else data if isinstance(data, list) else ():
        more_keys, more_strings = _strings(value)
        keys += more_keys
        strings += more_strings
    return keys, strings


def test_what_the_direct_writer_cannot_write_goes_to_pyyaml_in_order() -> None:
    objects = [{"a": 1.5}, {"b": "x"}, {1: "int key"}, {"c": ["d"]}, {}]
    assert dump_many(objects) == [_dump(o, yaml_module._Dumper) for o in objects[:4]] + ["{}\n"]


def _dump(data: object, dumper: type) -> str:
    return yaml.dump(
        data, Dumper=dumper, sort_keys=False, default_flow_style=False, width=1 << 30, allow_unicode=True
    )
