"""The lock file's read limit follows from the documented size limit of a platform (issue 39): a
tree `synth` may write is never refused when read back for its lock's size."""

from __future__ import annotations

from pathlib import Path

from gpuplatform.model.limits import MAX_FILES
from gpuplatform.output.serialize import lock_document
from gpuplatform.output.write import LOCK_ENTRY_MAX_BYTES, LOCK_FILE, LOCK_MAX_BYTES, OwnedTree, owned_tree

#: The longest path a tree can hold: a 63-character wave and namespace, the longest kind, a
#: 253-character object name (Kubernetes' limits), as `render/tree.py` names files.
LONGEST = f"waves/31-{'w' * 63}/40-tenants/{'n' * 63}/validatingadmissionpolicybinding_{'n' * 63}_{{}}.yaml"


def _lock(count: int, path: str, width: int) -> bytes:
    files = {path.format(f"{i:07d}".rjust(width, "x")): b"" for i in range(count)}
    return lock_document(files, platform="lab", spec={}, origin={})


def test_every_entry_of_the_longest_paths_fits_the_bound_the_read_limit_follows_from() -> None:
    lock = _lock(1_000, LONGEST, 253)
    assert len(lock) <= 1_000 * LOCK_ENTRY_MAX_BYTES
    assert MAX_FILES * LOCK_ENTRY_MAX_BYTES < LOCK_MAX_BYTES


def test_a_lock_over_the_old_64_mib_limit_is_read_back(tmp_path: Path) -> None:
    # GIVEN a tree whose lock lists 560,000 files (76 MB: within the limits, refused before)
    tree = tmp_path / "lab"
    tree.mkdir()
    lock = _lock(560_000, "waves/{}/10-nodes/node_gpu-0000.yaml", 20)
    assert len(lock) > 64 * 1024 * 1024
    (tree / LOCK_FILE).write_bytes(lock)
    # WHEN the writer reads it back / THEN it is the tree gpuplatform wrote
    assert isinstance(owned_tree(tree, "lab"), OwnedTree)
