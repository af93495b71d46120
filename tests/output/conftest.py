"""The writer as the CLI runs it: the user's state key (`state_home`), so that a run recovers what
another process recorded."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _cli(cli_runtime: None) -> None:
    """Every test here runs under the CLI's runtime."""
