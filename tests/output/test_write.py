"""Replacing a platform tree: atomic swap, refusal of foreign folders, recovery, the lock."""

from __future__ import annotations

import fcntl
from pathlib import Path

import pytest

from gpuplatform.errors import InputError
from gpuplatform.output.serialize import LOCK_FILE
from gpuplatform.output.write import exclusive_output, recover, replace_tree


def _files(marker: str) -> dict[str, bytes]:
    return {LOCK_FILE: b"{}", "waves/a.yaml": marker.encode(), f"only-{marker}.yaml": b"x"}


def test_replace_swaps_the_whole_tree(tmp_path: Path) -> None:
    replace_tree(tmp_path, "lab", _files("old"))
    replace_tree(tmp_path, "lab", _files("new"))
    assert (tmp_path / "lab" / "waves" / "a.yaml").read_text() == "new"
    assert not (tmp_path / "lab" / "only-old.yaml").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lab"]


def test_refuses_a_folder_without_our_lock_file(tmp_path: Path) -> None:
    (tmp_path / "lab").mkdir()
    (tmp_path / "lab" / "precious.txt").write_text("mine")
    with pytest.raises(InputError, match=r"has no gpuplatform\.lock\.json"):
        replace_tree(tmp_path, "lab", _files("new"))
    assert (tmp_path / "lab" / "precious.txt").read_text() == "mine"


def test_recover_restores_an_old_tree_left_between_renames(tmp_path: Path) -> None:
    (tmp_path / ".lab.old").mkdir()
    (tmp_path / ".lab.old" / LOCK_FILE).write_text("{}")
    (tmp_path / ".other.new").mkdir()
    recover(tmp_path)
    assert (tmp_path / "lab" / LOCK_FILE).is_file()
    assert not (tmp_path / ".other.new").exists()


def test_second_writer_fails_clearly_while_the_lock_is_held(tmp_path: Path) -> None:
    with open(tmp_path / ".gpuplatform.lock", "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        with (
            pytest.raises(InputError, match="another gpuplatform synth holds the lock"),
            exclusive_output(tmp_path, timeout=0.1),
        ):
            pass
