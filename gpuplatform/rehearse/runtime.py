"""A container runtime for the programs the product ships: each container runs its rendered command
as a local process in a root of its own, with its volumes at their mount paths.

The root is a tmpfs in a private mount namespace (`unshare --mount`), with the host's `/usr` and
`/etc` read-only (the shell, `kubectl` and `jq` the programs call), `/proc` and `/dev`, the pod's
volumes (ConfigMaps, emptyDirs, the projected service-account token), and `/rehearsal/bin` first on
PATH: the release's `kubectl`, the clock's `sleep` and `date`, and `nvidia-smi`. As root the process
runs as the container's `runAsUser`; without root, in a user namespace as the mapped root.
What differs from the image (`alpine/k8s`, `nvidia/cuda`): the host's shell (dash) and jq.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gpuplatform.rehearse.controlplane import die_with_parent

__all__ = ["Mount", "Process", "Runtime", "runtime_problem"]

_LAUNCHER = r"""set -eu
root=$1 spec=$2 user=$3 readonly=$4
shift 4
/usr/bin/mount -t tmpfs -o mode=0755 rehearsal "$root"
for d in bin sbin lib lib32 lib64 libx32 usr etc; do
  if [ -L "/$d" ]; then /usr/bin/ln -s "$(/usr/bin/readlink "/$d")" "$root/$d"
  elif [ -d "/$d" ]; then
    /usr/bin/mkdir "$root/$d"
    /usr/bin/mount --rbind "/$d" "$root/$d"
    /usr/bin/mount -o remount,bind,ro "$root/$d" 2>/dev/null || true
  fi
done
/usr/bin/mkdir -p "$root/dev" "$root/proc" "$root/tmp" "$root/root"
/usr/bin/mount --rbind /dev "$root/dev"
/usr/bin/mount --rbind /proc "$root/proc"
while IFS=' ' read -r src dst mode; do
  if [ -d "$src" ]; then /usr/bin/mkdir -p "$root$dst"
  else /usr/bin/mkdir -p "$root$(/usr/bin/dirname "$dst")"; : > "$root$dst"; fi
  /usr/bin/mount --bind "$src" "$root$dst"
  if [ "$mode" = ro ]; then /usr/bin/mount -o remount,bind,ro "$root$dst"; fi
done < "$spec"
if [ "$readonly" = ro ]; then /usr/bin/mount -o remount,ro "$root"; fi
cd "$root"
if [ "$user" = - ]; then exec /usr/sbin/chroot "$root" "$@"; fi
exec /usr/sbin/chroot --userspec="$user:$user" "$root" "$@"
"""


def runtime_problem() -> str:
    """Why programs cannot run here ('' when they can): mount namespaces and the tools they need."""
    for tool in ("unshare", "mount", "chroot", "mkfifo"):
        if shutil.which(tool) is None and not Path(f"/usr/sbin/{tool}").exists():
            return f"{tool} is not installed"
    args = ["unshare", "--mount", "--propagation", "private"]
    if os.geteuid() != 0:
        args.append("--map-root-user")
    try:
        probe = subprocess.run([*args, "true"], capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unshare failed: {exc}"
    if probe.returncode != 0:
        return f"this machine refuses mount namespaces ({probe.stderr.decode(errors='replace').strip()})"
    return ""


@dataclass(frozen=True)
class Mount:
    """A host path at `path` in the container."""

    source: Path
    path: str
    read_only: bool = False


@dataclass
class Process:
    """One running container."""

    pod: str
    container: str
    popen: subprocess.Popen[bytes]
    log: Path
    root: Path
    exit_code: int | None = None
    signalled: bool = False

    def poll(self) -> int | None:
        if self.exit_code is None:
            code = self.popen.poll()
            if code is not None:
                self.exit_code = 128 + (-code) if code < 0 else code
                _reap(self.popen.pid)
        return self.exit_code

    def terminate(self) -> None:
        """SIGTERM to the container's processes, as the kubelet does on deletion."""
        self.signalled = True
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGTERM)

    def kill(self) -> None:
        _reap(self.popen.pid)
        self.poll()


def _reap(pgid: int) -> None:
    """Every process left in the container's group (a background `sleep`) is killed."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


@dataclass
class Runtime:
    """Starts containers under `folder`; `bin` holds what goes first on PATH."""

    folder: Path
    bin: Path
    clock_dir: Path
    processes: dict[tuple[str, str], Process] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / "launcher.sh").write_text(_LAUNCHER)

    def start(
        self,
        pod: str,
        container: str,
        argv: Sequence[str],
        env: Mapping[str, str],
        mounts: Sequence[Mount],
        *,
        user: int | None,
        read_only_root: bool,
        workdir: str = "",
    ) -> Process:
        """Run `argv` as container `container` of `pod` (`namespace/name`)."""
        slot = self.folder / f"{pod.replace('/', '_')}_{container}"
        shutil.rmtree(slot, ignore_errors=True)
        slot.mkdir(parents=True)
        root = slot / "root"
        root.mkdir()
        spec = slot / "mounts"
        everything = [
            Mount(self.bin, "/rehearsal/bin", True),
            Mount(self.clock_dir, "/rehearsal/clock", False),
            *mounts,
        ]
        spec.write_text("".join(f"{m.source} {m.path} {'ro' if m.read_only else 'rw'}\n" for m in everything))
        unshare = ["unshare", "--mount", "--propagation", "private"]
        if os.geteuid() != 0:
            unshare.append("--map-root-user")
        who = str(user) if user is not None and os.geteuid() == 0 else "-"
        command = list(argv)
        if workdir:
            command = ["/bin/sh", "-c", 'cd "$0" && exec "$@"', workdir, *command]
        full_env = {
            "PATH": "/rehearsal/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": "/root" if user in (None, 0) else "/",
            **env,
            "CLOCK_DIR": "/rehearsal/clock",
            "REHEARSAL_POD": pod,
        }
        log = slot / "log"
        with log.open("wb") as out:
            popen = subprocess.Popen(
                [*unshare, "/bin/sh", str(self.folder / "launcher.sh"), str(root), str(spec), who,
                 "ro" if read_only_root else "rw", *command],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=full_env,
                start_new_session=True,
                preexec_fn=die_with_parent,
            )  # fmt: skip
        process = Process(pod, container, popen, log, root)
        self.processes[(pod, container)] = process
        return process

    def running(self) -> set[str]:
        """Pods with a container process still running."""
        return {p.pod for p in self.processes.values() if p.poll() is None}

    def stop_all(self) -> None:
        for process in self.processes.values():
            process.terminate()
            process.kill()
