"""Goldens of what the CLI prints and no committed file holds: the plan a reviewer reads, and the
entry points a user commits once to the cluster's folder (`flux-entry`, `argocd-entry`). The
rendered trees are not here: `dist/` is their golden (`synth --check`,
tests/commands/test_committed_dist.py).

Update with `pytest tests/test_cli_snapshots.py --snapshot-update` and review the diff like code.
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from gpuplatform.cli import main
from tests.conftest import REPO

STACK = str(REPO / "stacks" / "reference.py")


class TextSnapshot(SingleFileSnapshotExtension):
    """One readable text file per golden."""

    _write_mode = WriteMode.TEXT
    file_extension = "txt"


COMMANDS: dict[str, list[str]] = {
    "plan-reference": ["plan", STACK, "--platform", "reference"],
    "flux-entry-reference": ["flux-entry", STACK, "--platform", "reference"],
    "flux-entry-reference-staging": ["flux-entry", STACK, "--platform", "reference-staging"],
    "argocd-entry-reference": ["argocd-entry", STACK],
}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_what_the_cli_prints(name: str, snapshot: SnapshotAssertion) -> None:
    result = CliRunner().invoke(main, COMMANDS[name])
    assert result.exit_code == 0, result.output
    assert result.stdout == snapshot.use_extension(TextSnapshot)
