"""The rehearsal's virtual clock: the shipped programs' `sleep` and `date +%s` read it, so a gate that
waits 900 s costs no wall time.

Time moves only when every running program is asleep and the cluster is quiet: then the clock jumps
to the first wake-up or timer (a kubelet's delayed ResourceSlice wipe, say), wakes whoever is due and
fires what is due. A program talks to the clock through two shims on its PATH, `sleep` and `date`,
and a FIFO: `sleep N` writes one line (`<pod> <pid> <seconds> <reply fifo>`, shorter than PIPE_BUF so
concurrent writers never interleave) and blocks reading its own reply FIFO, which sits next to the
request FIFO (the path a program gives is its own view of the folder; only the name is read).
"""

from __future__ import annotations

import heapq
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Clock", "Sleeper", "write_shims"]

_SLEEP = r"""#!/bin/sh
# rehearsal shim: sleep on the virtual clock (gpuplatform rehearse)
secs=0
for a in "$@"; do
  case "$a" in
    *[!0-9.smhd]*|'') ;;
    *h) secs=$(( ${a%h} * 3600 ));;
    *m) secs=$(( ${a%m} * 60 ));;
    *d) secs=$(( ${a%d} * 86400 ));;
    *s) secs=${a%s};;
    *) secs=$a;;
  esac
done
reply="$CLOCK_DIR/r.$$"
rm -f "$reply"
mkfifo -m 0666 "$reply" || exit 1
echo "${REHEARSAL_POD:--} $$ $secs $reply" > "$CLOCK_DIR/requests"
read _ < "$reply"
rm -f "$reply"
"""

_DATE = r"""#!/bin/sh
# rehearsal shim: date on the virtual clock (gpuplatform rehearse)
now=$(cat "$CLOCK_DIR/now")
if [ "$*" = "+%s" ]; then echo "$now"; exit 0; fi
exec /bin/date -d "@$now" "$@"
"""


def write_shims(folder: Path) -> None:
    """`sleep` and `date` that follow the clock whose FIFO is in `$CLOCK_DIR`."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in (("sleep", _SLEEP), ("date", _DATE)):
        path = folder / name
        path.write_text(text)
        path.chmod(0o755)


@dataclass(order=True)
class Sleeper:
    """A program blocked in `sleep`: wakes at `wake` (virtual seconds)."""

    wake: float
    reply: str = field(compare=False)
    pod: str = field(compare=False)
    pid: int = field(compare=False)


@dataclass(order=True)
class _Timer:
    at: float
    seq: int
    action: Callable[[], None] = field(compare=False)
    what: str = field(compare=False)


class Clock:
    """Virtual seconds since the epoch, starting at the wall clock; served to programs in `folder`."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        folder.chmod(0o777)
        self.now = float(int(time.time()))
        self._lock = threading.Lock()
        self._sleepers: list[Sleeper] = []
        self._timers: list[_Timer] = []
        self._seq = 0
        self._write_now()
        self._fifo = folder / "requests"
        os.mkfifo(self._fifo, 0o666)
        self._fifo.chmod(0o666)
        self._stop = False
        self._reader = threading.Thread(target=self._read, name="clock-fifo", daemon=True)
        self._reader.start()

    def _write_now(self) -> None:
        scratch = self.folder / ".now"
        scratch.write_text(f"{int(self.now)}\n")
        scratch.chmod(0o644)
        scratch.replace(self.folder / "now")

    def _read(self) -> None:
        fd = os.open(self._fifo, os.O_RDWR)  # never sees EOF while it holds a writer end itself
        with os.fdopen(fd, "rb", buffering=0) as stream:
            pending = b""
            while not self._stop:
                chunk = stream.read(4096)
                if not chunk:
                    continue
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    self._request(line.decode(errors="replace"))

    def _request(self, line: str) -> None:
        parts = line.split()
        if len(parts) != 4:
            return
        pod, pid, seconds, reply = parts
        try:
            sleeper = Sleeper(
                self.now + max(0.0, float(seconds)), str(self.folder / Path(reply).name), pod, int(pid)
            )
        except ValueError:
            return
        with self._lock:
            heapq.heappush(self._sleepers, sleeper)

    def stop(self) -> None:
        """Stop serving: the reader is woken by a line of its own and joined."""
        self._stop = True
        if _write_line(str(self._fifo)):
            self._reader.join(timeout=5)
        with self._lock:
            sleepers, self._sleepers = self._sleepers, []
        for s in sleepers:
            _wake(s)

    def after(self, seconds: float, what: str, action: Callable[[], None]) -> None:
        """Run `action` once `seconds` of virtual time have passed."""
        with self._lock:
            self._seq += 1
            heapq.heappush(self._timers, _Timer(self.now + seconds, self._seq, action, what))

    def sleeping_pods(self) -> set[str]:
        """Pods with a program blocked in `sleep` (dead sleepers dropped)."""
        with self._lock:
            self._sleepers = [s for s in self._sleepers if _alive(s.pid)]
            heapq.heapify(self._sleepers)
            return {s.pod for s in self._sleepers}

    def pending_timers(self) -> int:
        with self._lock:
            return len(self._timers)

    def advance(self, running: Iterable[str], *, step: float | None = None, idle: bool = False) -> bool:
        """If every pod in `running` sleeps (or none runs), move to the first wake-up or timer (at
        most `step` seconds on), wake and fire what is due. `idle`: nothing runs, so time passes
        even without a wake-up or timer (what waits for the cluster waits in virtual time too).
        True if time moved."""
        running = set(running)
        if not running <= self.sleeping_pods():
            return False
        with self._lock:
            candidates = [s.wake for s in self._sleepers[:1]] + [t.at for t in self._timers[:1]]
            if idle and step is not None:
                candidates.append(self.now + step)
            if not candidates:
                return False
            target = min(candidates)
            if step is not None:
                target = min(target, self.now + step)
            if target < self.now:
                target = self.now
            self.now = target
            due: list[Sleeper] = []
            while self._sleepers and self._sleepers[0].wake <= self.now:
                due.append(heapq.heappop(self._sleepers))
            fired: list[_Timer] = []
            while self._timers and self._timers[0].at <= self.now:
                fired.append(heapq.heappop(self._timers))
        self._write_now()
        with (self.folder.parent / "clock.log").open("a") as log:
            woke = ", ".join(s.pod for s in due)
            log.write(
                f"{self.now:.0f} woke [{woke}] fired [{', '.join(t.what for t in fired)}] running [{', '.join(sorted(running))}]\n"
            )
        for timer in fired:
            timer.action()
        for sleeper in due:
            _wake(sleeper)
        return True


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _wake(sleeper: Sleeper) -> None:
    _write_line(sleeper.reply)


def _write_line(fifo: str) -> bool:
    """One newline into `fifo` if a reader holds it open; whether it was written."""
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        os.write(fd, b"\n")
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
