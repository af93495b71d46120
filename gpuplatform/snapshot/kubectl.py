"""kubectl as `snapshot` runs it: bounded in time, and in memory where a pod decides how much it prints.

A call slower than `TIMEOUT` seconds is killed and reads as a failed call (`kubectl timed out after
120 s`), so `snapshot` records the kind or log as missing exactly as it records a forbidden one,
never a crash. A pod's log is whatever the pod printed: only its last `limit` bytes are held while it
is read (a tenant's pod labelled as a gate may print gigabytes).
"""

from __future__ import annotations

import subprocess
import tempfile
import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["TIMEOUT", "Tail", "kubectl", "kubectl_tail"]

#: Seconds one kubectl call may take.
TIMEOUT = 120
_CHUNK = 1 << 16


def _command(args: Sequence[str], context: str | None) -> list[str]:
    return ["kubectl", *(["--context", context] if context else []), *args]


def _timed_out() -> str:
    return f"kubectl timed out after {TIMEOUT} s"


def kubectl(args: Sequence[str], context: str | None) -> subprocess.CompletedProcess[str]:
    """Run kubectl; a call that outlasts `TIMEOUT` is a failed one whose stderr says so."""
    command = _command(args, context)
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(command, 124, "", _timed_out())


@dataclass(frozen=True)
class Tail:
    """What a kubectl call printed, cut to its end: its exit code, the last bytes of its output as
    text, how many bytes it printed in all, and its stderr."""

    returncode: int
    stdout: str
    printed: int
    stderr: str


def kubectl_tail(args: Sequence[str], context: str | None, limit: int) -> Tail:
    """Run kubectl holding only the last `limit` bytes of its output; killed after `TIMEOUT`."""
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(_command(args, context), stdout=subprocess.PIPE, stderr=errors)
        fired = threading.Event()

        def expire() -> None:
            fired.set()
            process.kill()

        timer = threading.Timer(TIMEOUT, expire)
        timer.start()
        kept: deque[bytes] = deque()
        held = printed = 0
        try:
            assert process.stdout is not None
            while chunk := process.stdout.read(_CHUNK):
                kept.append(chunk)
                held, printed = held + len(chunk), printed + len(chunk)
                while held - len(kept[0]) >= limit:
                    held -= len(kept.popleft())
            code = process.wait()
        finally:
            timer.cancel()
            if process.stdout is not None:
                process.stdout.close()
            if process.poll() is None:
                process.kill()
                process.wait()
        if fired.is_set():
            return Tail(124, "", printed, _timed_out())
        errors.seek(0)
        stderr = errors.read().decode(errors="replace")
    return Tail(code, b"".join(kept)[-limit:].decode(errors="replace"), printed, stderr)
