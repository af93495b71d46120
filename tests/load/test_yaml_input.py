"""The defensive YAML reader: duplicate keys, alias bombs, size, encoding, document count."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuplatform.errors import InputError
from gpuplatform.load.yaml_input import MAX_FILE_BYTES, parse_yaml, parse_yaml_documents, read_data, read_yaml


def _message(exc: pytest.ExceptionInfo[InputError]) -> str:
    return exc.value.problems[0].line()


def test_duplicate_keys_are_an_error_with_the_line() -> None:
    with pytest.raises(InputError) as exc:
        parse_yaml("spec:\n  domain: a\n  domain: b\n", "s.yaml")
    assert _message(exc) == "error: s.yaml:line 3 column 3: YAML error: duplicate key 'domain'"


def test_billion_laughs_fails_fast() -> None:
    lines = ['a: &a ["x","x","x","x","x","x","x","x","x"]']
    for prev, cur in zip("abcdefghi", "bcdefghij", strict=True):
        lines.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 9) + "]")
    with pytest.raises(InputError) as exc:
        parse_yaml("\n".join(lines), "bomb.yaml")
    assert "aliases expand to more than" in _message(exc)


def test_shared_aliases_below_the_bound_are_fine() -> None:
    assert parse_yaml("a: &x [1, 2]\nb: *x\n", "f.yaml") == {"a": [1, 2], "b": [1, 2]}


def test_recursive_alias_is_refused() -> None:
    with pytest.raises(InputError, match="refers to itself"):
        parse_yaml("a: &a {b: *a}", "f.yaml")


def test_one_document_expected() -> None:
    with pytest.raises(InputError, match="holds 2 documents"):
        parse_yaml("a: 1\n---\nb: 2\n", "f.yaml")
    with pytest.raises(InputError, match="is empty"):
        parse_yaml("", "f.yaml")
    assert parse_yaml_documents("a: 1\n---\nb: 2\n", "f.yaml") == [{"a": 1}, {"b": 2}]


def test_non_utf8_and_oversized_files_and_missing_files(tmp_path: Path) -> None:
    latin = tmp_path / "latin.yaml"
    latin.write_bytes("name: caf\xe9\n".encode("latin-1"))
    with pytest.raises(InputError, match="not UTF-8 \\(invalid byte at offset 9\\)"):
        read_yaml(latin)
    big = tmp_path / "big.yaml"
    big.write_bytes(b"a: " + b"x" * (MAX_FILE_BYTES + 1))
    with pytest.raises(InputError, match="over the limit"):
        read_yaml(big)
    with pytest.raises(InputError, match="no such file"):
        read_yaml(tmp_path / "missing.yaml")
    with pytest.raises(InputError, match="is a directory"):
        read_yaml(tmp_path)


def test_syntax_errors_name_line_and_column() -> None:
    with pytest.raises(InputError) as exc:
        parse_yaml("a: [1, 2\n", "f.yaml")
    assert _message(exc).startswith("error: f.yaml:line 2 column 1: YAML error:")


def test_non_scalar_keys_are_refused() -> None:
    with pytest.raises(InputError, match="mapping key must be a scalar"):
        parse_yaml("? [a, b]\n: 1\n", "f.yaml")


def test_cluster_json_with_a_duplicate_key_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "nodes.json"
    path.write_text('{"items": [{"metadata": {"name": "a", "uid": "1", "name": "b"}}]}')
    with pytest.raises(InputError) as exc:
        read_data(path)
    assert _message(exc) == f"error: {path}: JSON error: duplicate key 'name'"
    path.write_text('{"items": [{"metadata": {"name": "a", "uid": "1"}}]}')
    assert read_data(path) == {"items": [{"metadata": {"name": "a", "uid": "1"}}]}


@pytest.mark.parametrize(
    "text",
    [
        '{"items": [{"spec": {"pciBusID": "0000:90:00.0", "pciBusID": "0000:90:00.0"}}]}',
        '{"a": "y", "a": "x\\u003a"}',
        '{"a": {"b": [1, {"c": 1, "c": {"d": ":"}}]}}',
        '{"a": 123456789012345678901234567890, "b": 1, "b": 2}',
    ],
)
def test_cluster_json_duplicates_are_found_however_the_text_is_spelled(tmp_path: Path, text: str) -> None:
    path = tmp_path / "slices.json"
    path.write_text(text)
    with pytest.raises(InputError, match="JSON error: duplicate key"):
        read_data(path)


def test_cluster_json_without_duplicates_reads_as_the_standard_library_does(tmp_path: Path) -> None:
    text = '{"a": "x\\u003a:y", "b": [12345678901234567890123, 1.5, "0000:90:00.0"], "c": {"d": null}}'
    path = tmp_path / "slices.json"
    path.write_text(text)
    assert read_data(path) == json.loads(text)
