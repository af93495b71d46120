"""Reading every file people and tools hand us, defensively: the one bounded reader.

Only regular files are read (a FIFO would block, `/dev/zero` never ends), at most a size limit
(8 MiB for specs, overlays and manifests; 32 MiB for cluster data: snapshots and inventories),
as UTF-8. PyYAML accepts duplicate keys silently and expands aliases without bound; this reader
refuses both and insists on the number of documents the caller expects. Values are plain data as
Kubernetes and Helm read them (sigs.k8s.io/yaml, `load/helm_scalars.py`), not as PyYAML's YAML 1.1:
`10:30` and a timestamp stay strings, `0o17` and `1e3` are numbers, `y` is true, mapping keys
are strings (`.inf` and `.nan` are read, and refused by the model at their field, as JSON cannot
hold them); `!!binary`, `!!set`, `!!omap` and `!!pairs` are refused where
they are written.
"""

from __future__ import annotations

import errno
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
from gpuplatform.load import helm_scalars as scalars

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
    """C-accelerated safe loader: scalars as Helm reads them, mappings that refuse duplicate keys."""

    def resolve(self, kind: type, value: Any, implicit: Any) -> Any:
        """A plain scalar's tag by go-yaml v2's rules; anything else as PyYAML resolves it."""
        if kind is yaml.ScalarNode and implicit[0]:
            return scalars.plain_tag(value)
        return super().resolve(kind, value, implicit)  # type: ignore[no-untyped-call]


def _error(node: yaml.Node, problem: str) -> yaml.constructor.ConstructorError:
    return yaml.constructor.ConstructorError(None, None, problem, node.start_mark)


def _key(loader: _StrictLoader, node: yaml.Node) -> str:
    """A mapping key as sigs.k8s.io/yaml makes it: a string (`true` and `1` as "true" and "1")."""
    key = loader.construct_object(node, deep=True)
    if type(key) is str:
        return key
    if type(key) is bool:
        return "true" if key else "false"
    if type(key) is int:
        return str(key)
    if type(key) is float:
        return scalars.float_key(key)
    if isinstance(key, list | dict):
        raise _error(node, "a mapping key must be a scalar")
    raise _error(node, f"a mapping key must be a string, a number or a boolean, not {key!r}")


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    out: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = _key(loader, key_node)
        if key in out:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        out[key] = loader.construct_object(value_node, deep=deep)
    return out


def _construct_timestamp(loader: _StrictLoader, node: yaml.ScalarNode) -> str:
    return _text(loader, node)


def _text(loader: _StrictLoader, node: yaml.Node) -> str:
    value: str = loader.construct_scalar(node)  # type: ignore[arg-type]
    return value


def _construct_bool(loader: _StrictLoader, node: yaml.ScalarNode) -> bool:
    value = _text(loader, node)
    if value not in scalars.WORDS:
        raise _error(node, f"cannot read {value!r} as a boolean")
    return scalars.WORDS[value]


def _construct_int(loader: _StrictLoader, node: yaml.ScalarNode) -> int:
    value = scalars.go_int(_text(loader, node).replace("_", ""))
    if value is None:
        raise _error(node, f"cannot read {_text(loader, node)!r} as a 64-bit integer")
    return value


def _construct_float(loader: _StrictLoader, node: yaml.ScalarNode) -> float:
    text = _text(loader, node)
    plain = text if text.startswith(".") else text.replace("_", "")
    whole = scalars.go_int(plain)
    value = float(whole) if whole is not None else scalars.go_float(plain)
    if value is None:
        raise _error(node, f"{text} is not a finite number (JSON, Helm and Kubernetes refuse it)")
    return value


def _construct_special(loader: _StrictLoader, node: yaml.ScalarNode) -> float:
    """`.inf`, `-.Inf`, `.nan`…: read, so that the model refuses them at their field (not JSON)."""
    return float(_text(loader, node).replace(".", "", 1))


def _construct_null(loader: _StrictLoader, node: yaml.ScalarNode) -> None:
    return None


def _refuse_tag(loader: _StrictLoader, node: yaml.Node) -> None:
    raise yaml.constructor.ConstructorError(
        None,
        None,
        f"YAML tag {node.tag.replace('tag:yaml.org,2002:', '!!')} is not supported (values are plain JSON data)",
        node.start_mark,
    )


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_StrictLoader.add_constructor("tag:yaml.org,2002:timestamp", _construct_timestamp)
_StrictLoader.add_constructor(scalars.BOOL, _construct_bool)
_StrictLoader.add_constructor(scalars.INT, _construct_int)
_StrictLoader.add_constructor(scalars.FLOAT, _construct_float)
_StrictLoader.add_constructor(scalars.NULL, _construct_null)
_StrictLoader.add_constructor(scalars.NOT_JSON, _construct_special)
_StrictLoader.add_constructor(scalars.MERGE, _text)  # `<<` as a value (as a key it merges)
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


_LINK = "is a symbolic link; gpuplatform does not follow links in a snapshot or a rendered tree"


def _read_bytes(path: Path, limit: int = MAX_FILE_BYTES, *, follow_links: bool = True) -> bytes:
    """At most `limit` + 1 bytes of a regular file (a FIFO or /dev/zero would never end); without
    `follow_links`, a link is refused, never read through."""
    try:
        info = path.stat() if follow_links else path.lstat()
        if stat.S_ISLNK(info.st_mode):
            raise InputError.single(str(path), "", _LINK)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError
        if not stat.S_ISREG(info.st_mode):
            raise InputError.single(str(path), "", "is not a regular file (a device, FIFO or socket)")
        if info.st_size > limit:
            raise InputError.single(str(path), "", f"file is over the limit of {limit} bytes")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | _nofollow(follow_links))
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):  # replaced between stat and open
                raise InputError.single(str(path), "", "is not a regular file (a device, FIFO or socket)")
            return handle.read(limit + 1)
    except FileNotFoundError:
        raise InputError.single(str(path), "", "no such file") from None
    except IsADirectoryError:
        raise InputError.single(str(path), "", "is a directory, not a file") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_links:
            raise InputError.single(str(path), "", _LINK) from None
        raise InputError.single(str(path), "", f"cannot read: {exc.strerror}") from None


def _nofollow(follow_links: bool) -> int:
    return 0 if follow_links else os.O_NOFOLLOW


def read_text(path: Path, limit: int = MAX_FILE_BYTES, *, follow_links: bool = True) -> str:
    """The UTF-8 text of a regular file of at most `limit` bytes."""
    return _decode(_read_bytes(path, limit, follow_links=follow_links), str(path), limit)


def read_head(path: Path, limit: int, *, follow_links: bool = True) -> str:
    """At most the first `limit` bytes of a regular file, as text (undecodable bytes replaced): logs."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | _nofollow(follow_links))
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_links:
            raise InputError.single(str(path), "", _LINK) from None
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


def read_data(path: Path, *, follow_links: bool = True) -> Any:
    """Cluster data (up to MAX_DATA_BYTES): JSON (`kubectl get -o json`) parsed as JSON, else YAML.

    JSON is parsed in C first; only a text that may hold a duplicate key is parsed again with the
    per-object check that names the key.
    """
    text = read_text(path, MAX_DATA_BYTES, follow_links=follow_links)
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
