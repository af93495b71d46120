"""Property: whatever an --out folder held before, synth changes nothing it did not create."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from gpuplatform.errors import EnvironmentFailure, InputError
from gpuplatform.output.serialize import lock_document
from gpuplatform.output.write import LOCK_FILE, STATE_FILE, write_trees
from tests.specs import listing

#: Names a project folder may hold next to, or inside, generated trees; several look like ours.
NAMES = [
    "lab",
    "other",
    "venv",
    "notes",
    ".lab.old",
    ".lab.new",
    ".venv.old",
    ".bashrc.new",
    ".gpuplatform-staging.0123456789abcdef.lab",
    ".gpuplatform-backup.0123456789abcdef.lab",
    STATE_FILE,
    LOCK_FILE,
    f"lab/{LOCK_FILE}",
    "lab/waves/a.yaml",
    "lab/extra.yaml",
    "lab/waves/new",
    f"other/{LOCK_FILE}",
    "other/waves/a.yaml",
    f"notes/{LOCK_FILE}",
    "notes/todo.md",
    "venv/bin",
]
KINDS = st.sampled_from(["file", "dir", "link-inside", "link-outside", "dangling"])
CONTENT = st.sampled_from([b"", b"{}", b'{"platform": "lab", "files": {}}', b"mine\n", b"\x00\xff"])


def _tree(platform: str, marker: str) -> dict[str, bytes]:
    files = {"waves/a.yaml": marker.encode(), "waves/b.yaml": b"b"}
    files[LOCK_FILE] = lock_document(files, platform=platform, spec={}, origin={})
    return files


def _place(out: Path, rel: str, kind: str, content: bytes, outside: Path) -> bool:
    """Put an entry at `rel` unless something is there already; whether it was put."""
    path = out / rel
    if os.path.lexists(path) or not path.parent.is_dir() or path.parent.is_symlink():
        return False
    if kind == "file":
        path.write_bytes(content)
    elif kind == "dir":
        path.mkdir()
    elif kind == "link-inside":
        path.symlink_to(out / "venv")
    elif kind == "link-outside":
        path.symlink_to(outside)
    else:
        path.symlink_to(outside / "missing")
    return True


@settings(max_examples=150, deadline=None)
@example(ours=set(), entries=[("lab", "dir", b""), (f"lab/{LOCK_FILE}", "dir", b"")], prune=False)
@example(
    ours=set(),
    entries=[("lab", "dir", b""), (f"lab/{LOCK_FILE}", "file", b'{"platform": "lab", "files": {}}')],
    prune=False,
)
@example(ours={"lab"}, entries=[(".lab.old", "dir", b""), (".bashrc.new", "file", b"")], prune=True)
@given(
    ours=st.sets(st.sampled_from(["lab", "other"])),
    entries=st.lists(st.tuples(st.sampled_from(NAMES), KINDS, CONTENT), max_size=10),
    prune=st.booleans(),
)
def test_synth_changes_nothing_it_did_not_create(
    ours: set[str], entries: list[tuple[str, str, bytes]], prune: bool
) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        out, outside = root / "out", root / "outside"
        outside.mkdir()
        (outside / "precious").write_text("outside")
        out.mkdir()
        # GIVEN trees an earlier synth wrote, then anything at all put around and inside them
        if ours:
            write_trees(out, {name: _tree(name, "old") for name in ours})
        touched = {
            rel.split("/")[0]
            for rel, kind, content in sorted(entries, key=lambda e: e[0].count("/"))
            if _place(out, rel, kind, content, outside)
        }
        before, outside_before = listing(out), listing(outside)
        # WHEN synth writes `lab` (pruning or not)
        try:
            write_trees(out, {"lab": _tree("lab", "new")}, prune=prune)
            failed = False
        except (InputError, EnvironmentFailure):
            failed = True
        after = listing(out)
        # THEN nothing outside --out changed, and inside it only trees it had written itself
        assert listing(outside) == outside_before
        created = {"lab"} & ours
        if prune:
            created |= {"other"} & ours - touched
        if failed:
            created = set()
        for rel, entry in before.items():
            if rel == STATE_FILE or rel.split("/")[0] in created:
                continue
            assert after.get(rel) == entry, rel
        if failed:
            assert {k: v for k, v in after.items() if k != STATE_FILE} == {
                k: v for k, v in before.items() if k != STATE_FILE
            }
        else:
            assert after["lab/waves/a.yaml"] == ("file", b"new")
            assert not any(k.startswith(".gpuplatform-") for k in set(after) - set(before))
