"""Counting the children a command forks (`gpuplatform.background.Background`)."""

from __future__ import annotations

import os

import pytest


def count_forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pids of the children forked from now on (the list grows as they are)."""
    forked: list[int] = []
    real = os.fork

    def counting() -> int:
        pid = real()
        if pid:
            forked.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", counting)
    return forked
