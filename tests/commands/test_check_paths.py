"""synth refuses a rendered path that leaves its tree or that no file system can hold."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuplatform.commands.synth import NAME_MAX_BYTES, check_paths
from gpuplatform.errors import InputError


@pytest.mark.parametrize(
    "path",
    [
        "/etc/passwd",
        "waves/../../x.yaml",
        "waves/./x.yaml",
        "..",
        "waves//x.yaml",
        "waves/x.yaml/",
        "waves\\x.yaml",
        "waves/x\0.yaml",
        "waves/" + "n" * (NAME_MAX_BYTES + 1) + ".yaml",
        "waves/" + "é" * 128,
    ],
)
def test_paths_outside_the_tree_or_too_long_are_refused(path: str) -> None:
    with pytest.raises(InputError):
        check_paths("stack.py", {"waves/ok.yaml": b"", path: b""})


def test_plain_paths_pass_long_or_not() -> None:
    deep = "/".join(["d" * 200] * 3) + "/f.yaml"
    check_paths("stack.py", {"waves/00-base/10-nodes/node_gpu-0.yaml": b"", ".hidden/x": b"", deep: b""})


def _slow(path: str) -> bool:
    parts = path.split("/")
    inside = not (path.startswith("/") or "\0" in path or "\\" in path or {"", ".", ".."} & set(parts))
    return inside and all(len(p.encode()) <= NAME_MAX_BYTES for p in parts)


@settings(max_examples=300, derandomize=True)
@given(
    st.lists(
        st.text(st.sampled_from(list("ab._-/\\\0é")), max_size=6) | st.just("x" * 256), min_size=1, max_size=4
    )
)
def test_a_path_passes_exactly_when_every_name_is_in_the_tree_and_short(names: list[str]) -> None:
    path = "/".join(names)
    try:
        check_paths("stack.py", {path: b""})
    except InputError:
        assert not _slow(path)
    else:
        assert _slow(path)
