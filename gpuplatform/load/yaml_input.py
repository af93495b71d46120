"""Reading every file people and tools hand us, defensively: the one bounded reader.

Only regular files are read (a FIFO would block, `/dev/zero` never ends), at most a size limit
(8 MiB for specs, overlays and manifests; 32 MiB for cluster data: snapshots and inventories),
as UTF-8. PyYAML accepts duplicate keys silently and expands aliases without bound; this reader
refuses both and insists on the number of documents the caller expects. Values are plain data as
Kubernetes and Helm read them (sigs.k8s.io/yaml): a timestamp stays a string; `!!binary`, `!!set`,
`!!omap` and `!!pairs` are refused where they are written.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import yaml

from gpuplatform.errors import InputError

__all__ = [
    "MAX_DATA_BYTES",
    "MAX_DEPTH",
    "MAX_EXPANDED_NODES",
    "MAX_FILE_BYTES",
    "parse_yaml",
    "read_data",
    "read_head",
    "read_text",
    "read_yaml",
    "read_yaml_documents",
]

MAX_FILE_BYTES = 8 * 1024 * 1024
#: Cluster data (`kubectl get -o json` of a kind, ResourceSlices): sized for the largest cluster a
#: platform may list (15,000 nodes, `MAX_CLUSTER_NODES`). The benchmark fleet's ResourceSlices (18.6
#: devices per node with its MIG layouts) are 33 KiB per node as `gpuplatform snapshot` writes them
#: (2-space indent): 64 MiB at 2,000 nodes, 166 MiB at 5,000, ~500 MiB at 15,000. Reading that much
#: JSON whole takes several GB of memory; a snapshot's kinds are read a batch at a time
#: (`load/json_list.py`).
MAX_DATA_BYTES = 640 * 1024 * 1024
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


def _construct_timestamp(loader: _StrictLoader, node: yaml.ScalarNode) -> str:
    value: str = loader.construct_scalar(node)
    return value


def _refuse_tag(loader: _StrictLoader, node: yaml.Node) -> None:
    raise yaml.constructor.ConstructorError(
        None,
        None,
        f"YAML tag {node.tag.replace('tag:yaml.org,2002:', '!!')} is not supported (values are plain JSON data)",
        node.start_mark,
    )


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_StrictLoader.add_constructor("tag:yaml.org,2002:timestamp", _construct_timestamp)
for _tag in ("binary", "set", "omap", "pairs"):
    _StrictLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", _refuse_tag)


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


def _decode(data: bytes, name: str, limit: int = MAX_FILE_BYTES) -> str:
    if len(data) > limit:
        raise InputError.single(name, "", f"file is {len(data)} bytes, over the limit of {limit}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError.single(name, "", f"not UTF-8 (invalid byte at offset {exc.start})") from None


def _mark(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    return f"line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""


def _check_depth(text: str, name: str) -> bool:
    """Refuse nesting deeper than MAX_DEPTH, from libyaml's events (its parser keeps no C recursion);
    whether the stream holds an alias (without one, nothing can expand)."""
    parser = yaml.CSafeLoader(text)
    aliases = False
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
            elif isinstance(event, yaml.AliasEvent):
                aliases = True
    finally:
        parser.dispose()
    return aliases


def parse_yaml_documents(text: str, name: str) -> list[Any]:
    """Parse every document of a YAML stream with the strict rules."""
    try:
        aliases = _check_depth(text, name)
        loader = _StrictLoader(text)
        try:
            docs: list[Any] = []
            while loader.check_node():
                node = loader.get_node()
                if node is None:
                    break
                if aliases and _expanded_size(node, name) > MAX_EXPANDED_NODES:
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


def _read_bytes(path: Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """At most `limit` + 1 bytes of a regular file (a FIFO or /dev/zero would never end)."""
    try:
        info = path.stat()
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError
        if not stat.S_ISREG(info.st_mode):
            raise InputError.single(str(path), "", "is not a regular file (a device, FIFO or socket)")
        if info.st_size > limit:
            raise InputError.single(str(path), "", f"file is over the limit of {limit} bytes")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):  # replaced between stat and open
                raise InputError.single(str(path), "", "is not a regular file (a device, FIFO or socket)")
            return handle.read(limit + 1)
    except FileNotFoundError:
        raise InputError.single(str(path), "", "no such file") from None
    except IsADirectoryError:
        raise InputError.single(str(path), "", "is a directory, not a file") from None
    except OSError as exc:
        raise InputError.single(str(path), "", f"cannot read: {exc.strerror}") from None


def read_text(path: Path, limit: int = MAX_FILE_BYTES) -> str:
    """The UTF-8 text of a regular file of at most `limit` bytes."""
    return _decode(_read_bytes(path, limit), str(path), limit)


def read_head(path: Path, limit: int) -> str:
    """At most the first `limit` bytes of a regular file, as text (undecodable bytes replaced): logs."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise InputError.single(str(path), "", f"cannot read: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InputError.single(str(path), "", "is not a regular file (a device, FIFO or socket)")
        return handle.read(limit).decode("utf-8", errors="replace")


def read_yaml(path: Path) -> Any:
    """Read one YAML document from `path`."""
    return parse_yaml(read_text(path), str(path))


def read_yaml_documents(path: Path) -> list[Any]:
    """Read every YAML document from `path`."""
    return parse_yaml_documents(read_text(path), str(path))


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) == len(pairs):
        return out
    key = next(k for k, n in Counter(k for k, _ in pairs).items() if n > 1)
    raise ValueError(f"duplicate key {key!r}")


_ESCAPED_COLON = re.compile(r"\\u003[aA]")


def _without_duplicates(text: str, value: Any) -> bool:
    """Whether parsing `text` into `value` dropped no duplicate key, without a hook per object.

    Every pair owns one `:` outside strings; `value` re-serialised (by orjson, in C) has one colon
    fewer for each pair a duplicate replaced, and never more: a string's colons are the text's
    unless it escapes one (`\\u003a`), and such a text takes the strict path.
    """
    if _ESCAPED_COLON.search(text):
        return False
    try:
        return text.count(":") == orjson.dumps(value).count(b":")
    except orjson.JSONEncodeError:  # integers past 64 bits, lone surrogates, deep nesting
        return False


def read_data(path: Path) -> Any:
    """Cluster data (up to MAX_DATA_BYTES): JSON (`kubectl get -o json`) parsed as JSON, else YAML.

    JSON is parsed in C first; only a text that may hold a duplicate key is parsed again with the
    per-object check that names the key.
    """
    text = read_text(path, MAX_DATA_BYTES)
    if not text.lstrip().startswith(("{", "[")):
        return parse_yaml(text, str(path))
    try:
        value = json.loads(text)
        if _without_duplicates(text, value):
            return value
        return json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise InputError.single(
            str(path), f"line {exc.lineno} column {exc.colno}", f"JSON error: {exc.msg}"
        ) from None
    except ValueError as exc:
        raise InputError.single(str(path), "", f"JSON error: {exc}") from None
    except RecursionError:
        raise InputError.single(str(path), "", "JSON nesting is too deep") from None
