"""Reading YAML that people and tools hand us, defensively.

PyYAML accepts duplicate keys silently and expands aliases without bound; this reader refuses
both, bounds the file size, insists on UTF-8 and on the number of documents the caller expects.
"""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import yaml

from gpuplatform.errors import InputError

__all__ = [
    "MAX_DEPTH",
    "MAX_EXPANDED_NODES",
    "MAX_FILE_BYTES",
    "parse_yaml",
    "read_text",
    "read_yaml",
    "read_yaml_documents",
]

MAX_FILE_BYTES = 8 * 1024 * 1024
#: Upper bound on YAML nodes after alias expansion (a "billion laughs" file stops here).
MAX_EXPANDED_NODES = 1_000_000
#: Deepest nesting accepted; libyaml's C composer recurses per level and crashes the process near 50,000.
MAX_DEPTH = 256


class _StrictLoader(yaml.CSafeLoader):
    """C-accelerated safe loader whose mappings refuse duplicate keys."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    out: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None, None, "a mapping key must be a scalar", key_node.start_mark
            ) from None
        if key in out:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        out[key] = loader.construct_object(value_node, deep=deep)
    return out


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _expanded_size(root: yaml.Node, name: str) -> int:
    """Node count with every alias expanded, computed without expanding (memoised per node)."""
    sizes: dict[int, int] = {}
    visiting: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            visiting.discard(key)
            sizes[key] = min(1 + sum(sizes[id(c)] for c in _children(node)), MAX_EXPANDED_NODES + 1)
            continue
        if key in sizes:
            continue
        if key in visiting:
            raise InputError.single(name, "", "YAML alias refers to itself (recursive structure)")
        visiting.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in _children(node) if id(c) not in sizes)
    return sizes[id(root)]


def _decode(data: bytes, name: str) -> str:
    if len(data) > MAX_FILE_BYTES:
        raise InputError.single(name, "", f"file is {len(data)} bytes, over the limit of {MAX_FILE_BYTES}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError.single(name, "", f"not UTF-8 (invalid byte at offset {exc.start})") from None


def _mark(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    return f"line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""


def _check_depth(text: str, name: str) -> None:
    """Refuse nesting deeper than MAX_DEPTH, from libyaml's events (its parser keeps no C recursion)."""
    parser = yaml.CSafeLoader(text)
    try:
        depth = 0
        while parser.check_event():
            event = parser.get_event()
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    raise InputError.single(name, "", f"YAML nesting is deeper than {MAX_DEPTH} levels")
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    finally:
        parser.dispose()


def parse_yaml_documents(text: str, name: str) -> list[Any]:
    """Parse every document of a YAML stream with the strict rules."""
    try:
        _check_depth(text, name)
        loader = _StrictLoader(text)
        try:
            docs: list[Any] = []
            while loader.check_node():
                node = loader.get_node()
                if node is None:
                    break
                if _expanded_size(node, name) > MAX_EXPANDED_NODES:
                    raise InputError.single(
                        name, "", f"YAML aliases expand to more than {MAX_EXPANDED_NODES} nodes"
                    )
                docs.append(loader.construct_document(node))
            return docs
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputError.single(name, _mark(exc), f"YAML error: {problem}") from None
    except RecursionError:
        raise InputError.single(name, "", "YAML nesting is too deep") from None


def parse_yaml(text: str, name: str) -> Any:
    """Parse exactly one YAML document (a stream of several is an error)."""
    docs = parse_yaml_documents(text, name)
    if len(docs) != 1:
        what = "is empty" if not docs else f"holds {len(docs)} documents where one was expected"
        raise InputError.single(name, "", f"YAML stream {what}")
    return docs[0]


def _read_bytes(path: Path) -> bytes:
    """At most MAX_FILE_BYTES + 1 bytes of a regular file (a FIFO or /dev/zero would never end)."""
    try:
        info = path.stat()
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError
        if not stat.S_ISREG(info.st_mode):
            raise InputError.single(str(path), "", "is not a regular file (a device, FIFO or socket)")
        if info.st_size > MAX_FILE_BYTES:
            raise InputError.single(str(path), "", f"file is over the limit of {MAX_FILE_BYTES} bytes")
        with path.open("rb") as handle:
            return handle.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise InputError.single(str(path), "", "no such file") from None
    except IsADirectoryError:
        raise InputError.single(str(path), "", "is a directory, not a file") from None
    except OSError as exc:
        raise InputError.single(str(path), "", f"cannot read: {exc.strerror}") from None


def read_text(path: Path) -> str:
    """The UTF-8 text of a YAML file, with the same size and encoding limits as `read_yaml`."""
    return _decode(_read_bytes(path), str(path))


def read_yaml(path: Path) -> Any:
    """Read one YAML document from `path`."""
    return parse_yaml(_decode(_read_bytes(path), str(path)), str(path))


def read_yaml_documents(path: Path) -> list[Any]:
    """Read every YAML document from `path`."""
    return parse_yaml_documents(_decode(_read_bytes(path), str(path)), str(path))
