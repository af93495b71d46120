"""Timing whole processes: what a user waits for, including interpreter start and imports.

Each command runs as its own process; wall time, its CPU time (user + system) and its peak RSS
(`wait4`'s rusage) are recorded: on a shared machine the CPU time is the steadier figure. The
machine is shared, so every figure is repeated and reported as min and median, with the load
average before and after the run.

Bytecode: an install from a wheel has the package's bytecode compiled (pip compiles it, as it did
every dependency's in `.venv`). An editable install under PYTHONDONTWRITEBYTECODE (set on this
machine) recompiles ~125 modules, 0.3 s, in every process; `precompile` writes the bytecode once
so the commands are timed as users run them.
"""

from __future__ import annotations

import compileall
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FLEET = ROOT / "benchmarks" / "fleet.py"
GPUPLATFORM = str(Path(sys.executable).parent / "gpuplatform")


def precompile() -> None:
    """Compile the package's bytecode into `__pycache__` (what pip does when it installs a wheel)."""
    compileall.compile_dir(ROOT / "gpuplatform", quiet=1)


def run(args: Sequence[str], env: Mapping[str, str] | None = None, cwd: Path = ROOT) -> dict[str, Any]:
    """Run `args` once: wall seconds, peak RSS in MiB, exit code (stdout and stderr discarded)."""
    start = time.perf_counter()
    process = subprocess.Popen(
        list(args),
        cwd=cwd,
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert process.stderr is not None
    stderr = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    return {
        "seconds": seconds,
        "cpuSeconds": usage.ru_utime + usage.ru_stime,
        "systemSeconds": usage.ru_stime,
        "peakRssMiB": usage.ru_maxrss / 1024,
        "exitCode": process.returncode,
        "stderrTail": stderr.decode(errors="replace").strip().splitlines()[-1:] if process.returncode else [],
    }


def repeat(
    args: Sequence[str] | Callable[[int], Sequence[str]],
    times: int,
    env: Mapping[str, str] | None = None,
    before: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """`run` `times` times (`before` runs untimed before each; `args` may depend on the run's
    number); min and median of wall and CPU seconds, peak RSS, exit codes."""
    precompile()
    runs = []
    for n in range(times):
        if before is not None:
            before()
        runs.append(run(args(n) if callable(args) else args, env))
    seconds = [r["seconds"] for r in runs]
    cpu = [r["cpuSeconds"] for r in runs]
    shown = args(0) if callable(args) else args
    out: dict[str, Any] = {
        "command": " ".join(Path(a).name if a == GPUPLATFORM else a for a in shown),
        "runs": times,
        "minSeconds": round(min(seconds), 3),
        "medianSeconds": round(statistics.median(seconds), 3),
        "minCpuSeconds": round(min(cpu), 3),
        "medianCpuSeconds": round(statistics.median(cpu), 3),
        "medianSystemSeconds": round(statistics.median(r["systemSeconds"] for r in runs), 3),
        "peakRssMiB": round(max(r["peakRssMiB"] for r in runs), 1),
        "exitCodes": sorted({r["exitCode"] for r in runs}),
    }
    errors = [line for r in runs for line in r["stderrTail"]]
    if errors:
        out["lastError"] = errors[-1]
    return out


def load() -> list[float]:
    """The 1-minute load average, the number of cores (the machine is shared) and `pace()`."""
    return [round(os.getloadavg()[0], 2), float(os.cpu_count() or 0), pace()]


def pace() -> float:
    """Seconds this interpreter takes for a fixed loop of 10 million additions, best of three: the
    machine's speed when the figures were taken (a shared virtual machine's speed drifts by half
    within an hour; figures taken at different paces do not compare)."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        total = 0
        for i in range(10_000_000):
            total += i
        best = min(best, time.perf_counter() - start)
    return round(best, 3)


def report(name: str, body: dict[str, Any]) -> None:
    """Print one benchmark's JSON."""
    print(json.dumps({"benchmark": name, **body}, indent=2))
