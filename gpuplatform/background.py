"""Independent work run by a forked child while the command goes on (the CLI's second core).

`Background(work)` forks a child that runs `work()` and sends its result back pickled; `result()`
returns it. The child is only an accelerator: when it is not asked for (the runtime's `fork`, off
in a library call) or cannot be used (no `fork`, one core, a threaded caller, which a fork could
deadlock) or when it fails in any way, `result()` runs `work()`
in the calling process, so the outcome, exceptions included, is exactly what a plain call gives.
`work` must not write to the terminal or to files: a child's output would interleave.
"""

from __future__ import annotations

import os
import pickle
import signal
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Generic, TypeVar

from gpuplatform.runtime import current

__all__ = ["Background", "can_fork", "forks"]

T = TypeVar("T")


def can_fork() -> bool:
    """Whether forking helps and is safe here: a spare core, `fork`, and no other thread."""
    return hasattr(os, "fork") and (os.cpu_count() or 1) >= 2 and threading.active_count() == 1


def forks() -> bool:
    """Whether a Background forks here: the runtime asks for it and `can_fork()`."""
    return current().fork and can_fork()


class Background(Generic[T]):
    """`work()` computed by a forked child (or, failing that, by `result()` itself).

    Use as a context manager: leaving the block without taking the result stops the child.
    """

    def __init__(self, work: Callable[[], T]) -> None:
        self._work = work
        self._pid = 0
        self._read = -1
        if forks():
            self._start()

    def _start(self) -> None:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns into the caller's code
            os.close(read)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            code = 0
            try:
                data = pickle.dumps(self._work(), pickle.HIGHEST_PROTOCOL)
                with os.fdopen(write, "wb") as pipe:
                    pipe.write(data)
            except BaseException:  # the parent computes it again and raises it there
                code = 1
            os._exit(code)
        os.close(write)
        self._pid, self._read = pid, read

    def result(self) -> T:
        """The child's result, or `work()` run here when there is no child or it failed."""
        if not self._pid:
            return self._work()
        read, self._read = self._read, -1
        with os.fdopen(read, "rb") as pipe:
            data = pipe.read()
        _, status = os.waitpid(self._pid, 0)
        self._pid = 0
        if os.waitstatus_to_exitcode(status) == 0 and data:
            try:
                found: T = pickle.loads(data)
            except Exception:  # a result that does not unpickle is computed here instead
                return self._work()
            return found
        return self._work()

    def stop(self) -> None:
        """Stop the child and forget its result (nothing happens without a child)."""
        if self._read >= 0:
            os.close(self._read)
            self._read = -1
        if self._pid:
            os.kill(self._pid, signal.SIGKILL)
            os.waitpid(self._pid, 0)
            self._pid = 0

    def __enter__(self) -> Background[T]:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()
