"""Background: a forked child computes, the caller gets exactly what a plain call gives."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

import pytest

from gpuplatform.background import Background, can_fork

forks = pytest.mark.skipif(not can_fork(), reason="needs fork and two cores")

pytestmark = pytest.mark.usefixtures("cli_runtime")


@forks
def test_the_result_is_computed_by_a_child() -> None:
    # GIVEN work that says which process ran it
    parent = os.getpid()
    # WHEN it runs in the background
    with Background(lambda: (os.getpid(), sorted({3, 1, 2}))) as work:
        pid, value = work.result()
    # THEN a child computed it and the value crossed over intact
    assert pid != parent and value == [1, 2, 3]


@forks
def test_an_exception_in_the_child_is_raised_by_a_run_in_the_caller() -> None:
    # GIVEN work that fails in any process but the caller's
    parent = os.getpid()

    def work() -> int:
        if os.getpid() != parent:
            raise ValueError("child")
        return 7

    # WHEN / THEN the caller computes it again
    with Background(work) as background:
        assert background.result() == 7
    # AND a failure in the caller is the caller's own exception
    with Background(lambda: int("x")) as failing, pytest.raises(ValueError, match="invalid literal"):
        failing.result()


@forks
def test_a_result_that_cannot_cross_is_computed_by_the_caller() -> None:
    parent = os.getpid()

    def work() -> Callable[[], int] | int:
        return (lambda: 1) if os.getpid() != parent else 2  # a lambda does not pickle

    with Background(work) as background:
        assert background.result() == 2


def test_a_threaded_caller_never_forks() -> None:
    # GIVEN another thread in the process (a fork could deadlock the child on its locks)
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        # WHEN / THEN the work runs in the caller, when the result is asked for
        with Background(os.getpid) as work:
            assert work.result() == os.getpid()
    finally:
        stop.set()
        thread.join()


@forks
def test_leaving_without_the_result_stops_the_child() -> None:
    # GIVEN a child busy for a minute
    with Background(lambda: time.sleep(60)) as work:
        pid = work._pid
        assert pid
    # WHEN the block is left early THEN the child is gone (killed and reaped)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


@forks
def test_an_interrupted_wait_stops_the_child(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a busy child, and Ctrl-C while the caller waits for its result
    def interrupted(fd: int, *args: object, **kwargs: object) -> None:
        os.close(fd)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt), Background(lambda: time.sleep(60)) as work:
        pid = work._pid
        monkeypatch.setattr(os, "fdopen", interrupted)
        work.result()
    # THEN the interrupt reaches the caller and the child is gone, its pipe closed once
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
