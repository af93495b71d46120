"""The one dumper: deterministic block YAML, literal multi-line strings, no wrapping, no aliases."""

from __future__ import annotations

import re
from pathlib import Path

from gpuplatform.output.yaml import dump_documents, dump_many, dump_yaml
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
