"""A List read a batch at a time gives `read_data`'s items, or leaves the file to `read_data`.

Every case is read three ways and compared: `read_data` (the reference), the streamed reader with
the default block, and with 7-byte blocks (a cut is tried after every item and a string, number or
escape is split across blocks).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuplatform.errors import InputError
from gpuplatform.load import json_list
from gpuplatform.load.json_list import read_list_items
from gpuplatform.load.yaml_input import read_data
from gpuplatform.snapshot import read as snapshot_module
from gpuplatform.snapshot.shapes import check_items

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "n", "labels": {"app": "a"}},
    "spec": {"nodeName": "node-1", "containers": [{"name": "c", "args": ['}, {"apiVersion": 1']}]},
    "status": {"phase": "Running", "containerStatuses": [{"name": "c", "ready": True}]},
}


def _list(items: list[Any], **dumps: Any) -> str:
    """`kubectl get -o json` output: `items` between `apiVersion` and `kind`, `metadata` last."""
    return json.dumps(
        {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}, **dumps
    )


def _streamed(path: Path, block: int, monkeypatch: pytest.MonkeyPatch) -> list[Any] | None:
    with monkeypatch.context() as patch:
        patch.setattr(json_list, "_BLOCK", block)
        return read_list_items(path)


def _outcome(path: Path) -> Any:
    """What the snapshot reader made of the file before it streamed: the items or the error line."""
    try:
        doc = read_data(path)
        items = doc.get("items") if isinstance(doc, dict) else None
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise InputError.single(
                str(path), "items", "expected `kubectl get -o json` output (a List of objects)"
            )
        return items
    except InputError as exc:
        return exc.problems[0].line()


def _checked(outcome: Any, path: Path) -> Any:
    """The outcome after the snapshot reader's shape check (`snapshot/shapes.py`), as it reads a kind."""
    if not isinstance(outcome, list):
        return outcome
    try:
        check_items(path.stem, outcome, str(path))
    except InputError as exc:
        return exc.problems[0].line()
    return outcome


def _read_kind(path: Path) -> Any:
    try:
        return snapshot_module._read_kind(path.parent, path.stem, None)
    except InputError as exc:
        return exc.problems[0].line()


def _assert_alike(path: Path, monkeypatch: pytest.MonkeyPatch, *, streams: bool) -> None:
    """Streamed (when it `streams`) or declined, and the snapshot reader's outcome unchanged."""
    expected = _outcome(path)
    for block in (7, 8 << 20):
        got = _streamed(path, block, monkeypatch)
        assert (got is not None) is streams, block
        if got is not None:
            assert got == expected
        with monkeypatch.context() as patch:
            patch.setattr(json_list, "_BLOCK", block)
            assert _read_kind(path) == _checked(expected, path)


@pytest.mark.parametrize(
    "text",
    [
        _list([POD, POD | {"metadata": {"name": "q"}}]),
        _list([POD] * 3, indent=4),
        _list([POD] * 3, separators=(",", ":")),
        _list([]),
        _list([], indent=2),
        '{"items": [{"a": 1}, {"a": [{"a": 2}, {"a": 3}], "b": "}, {\\"a\\": 2"}, {"a": 4}]}',
        '{"kind": "List", "metadata": {"items": [1]}, "items": [{"x": "]"}], "z": [[]]}',
        '\n\t {"items":[{"s":"\\u00e9\\ud83d\\ude00\\\\\\"\\n","n":-0,"f":1.5e300,"g":-2.5e-300}]} \n',
        '{"items": [{"big": 18446744073709551615, "small": -9223372036854775808}]}',
        '{"items": [{"deep": ' + "[" * 200 + "]" * 200 + "}]}",
        '{"items": [{"a": "' + "x}, {" * 4000 + '"}, {"a": "' + "\\u00e9" * 4000 + '"}]}',
    ],
    ids=[
        "kubectl",
        "indented",
        "compact",
        "empty",
        "empty-indented",
        "false-cuts",
        "keys-around",
        "escapes",
        "64-bit",
        "nested",
        "huge-string",
    ],
)
def test_a_list_streams_to_the_items_read_data_reads(
    text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "pods.json"
    path.write_text(text)
    _assert_alike(path, monkeypatch, streams=True)


@pytest.mark.parametrize(
    "text",
    [
        '{"items": [{"a": 1, "a": 2}]}',
        '{"items": [], "items": [{"a": 1}]}',
        '{"items": [{"a": "x\\u003ay"}]}',
        '{"items": [{"big": 18446744073709551616}]}',
        '{"items": [{"big": -9223372036854775809}]}',
        '{"items": [{"f": 1e400}]}',
        '{"items": [{"f": NaN}]}',
        '{"items": [{"s": "\\ud800"}]}',
        '{"items": [{"deep": ' + "[" * 300 + "]" * 300 + "}]}",
        '{"items": [{"deep": ' + "[" * 5000 + "]" * 5000 + "}]}",
        '{"items": [{"a": 1}, {"a": }]}',
        '{"items": [{"a": 1}, {"a": 2}',
        '{"items": [{"a": 1}]} x',
        '{"items": [{"a": 1}, 2]}',
        '{"items": {"a": 1}}',
        '{"kind": "List"}',
        '[{"items": []}]',
        "\ufeff" + '{"items": [{"a": 1}]}',
        '\x0c{"items": [{"a": 1}]}',
        "items:\n- a: 1\n",
        "",
    ],
    ids=[
        "duplicate-key",
        "duplicate-items",
        "escaped-colon",
        "beyond-u64",
        "beyond-i64",
        "infinity",
        "nan",
        "lone-surrogate",
        "deeper-than-orjson-writes",
        "too-deep",
        "malformed",
        "cut-short",
        "trailing",
        "not-an-object",
        "items-not-a-list",
        "no-items",
        "not-a-list-object",
        "bom",
        "form-feed",
        "yaml",
        "empty",
    ],
)
def test_what_the_stream_cannot_vouch_for_is_read_as_before(
    text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "pods.json"
    path.write_text(text)
    _assert_alike(path, monkeypatch, streams=False)


@pytest.mark.parametrize("raw", [b'"\xff"', b'"\xed\xa0\x80"', b'"\xc0\xaf"', b'"\xe2\x82"'])
def test_bytes_that_are_not_utf8_are_read_as_before(
    raw: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "pods.json"
    path.write_bytes(b'{"items": [{"a": 1}, {"s": ' + raw + b"}]}")
    _assert_alike(path, monkeypatch, streams=False)
    assert "not UTF-8" in _outcome(path)


def test_each_batch_passes_through_keep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a List of 50 items read in blocks of 64 bytes
    path = tmp_path / "pods.json"
    path.write_text(_list([{"n": n} for n in range(50)]))
    monkeypatch.setattr(json_list, "_BLOCK", 64)
    batches: list[int] = []

    def keep(batch: list[Any]) -> list[Any]:
        batches.append(len(batch))
        return [item["n"] for item in batch]

    # WHEN it is read through `keep`
    # THEN the items come in several batches, in order, as `keep` returned them
    assert read_list_items(path, keep) == list(range(50))
    assert len(batches) >= 5 and sum(batches) == 50


_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.sampled_from('ab:{}[]",\\ \n\u00e9\U0001f600'), max_size=8)
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "b", "{"]), inner),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(
    items=st.lists(st.dictionaries(st.sampled_from(["metadata", "spec", "x:y"]), _VALUES), max_size=6),
    indent=st.sampled_from([None, 2]),
    ascii_only=st.booleans(),
    block=st.sampled_from([5, 64, 8 << 20]),
)
def test_any_list_reads_alike_streamed_or_whole(
    items: list[dict[str, Any]], indent: int | None, ascii_only: bool, block: int, tmp_path_factory: Any
) -> None:
    path = tmp_path_factory.mktemp("list") / "pods.json"
    path.write_text(_list(items, indent=indent, ensure_ascii=ascii_only), encoding="utf-8")
    json_list_block = json_list._BLOCK
    json_list._BLOCK = block
    try:
        got = read_list_items(path)
    finally:
        json_list._BLOCK = json_list_block
    if got is not None:
        assert got == read_data(path)["items"]
    else:  # declined only for an integer of 19 digits or more (orjson may read it as a float)
        assert _long_integer(items)


def _long_integer(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_long_integer(v) for v in value.values())
    if isinstance(value, list):
        return any(_long_integer(v) for v in value)
    return type(value) is int and abs(value) >= 10**18
