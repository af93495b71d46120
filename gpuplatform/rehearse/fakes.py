"""The command-line tools a runbook calls that reach past the cluster (`helm`, `flux`, `argocd`, the
clouds' `gcloud`, `aws`, `az`), as fakes on the rehearsal's PATH, and the product's own `gpuplatform`.

Each fake records its arguments (one JSON line in `calls.jsonl`) and acts on the rehearsal's state
folder where the rehearsal acts in its place: `helm upgrade --reuse-values -f FILE` of the GPU
Operator merges FILE into the running release's values (read by `stack.py`); the engines' CLIs
answer as a reachable engine does (their sync is the rehearsal's, on merge); `git fetch` and
`git rev-parse FETCH_HEAD` give the commit the rehearsal merged last (`merged` in the state
folder); `gcloud container` is answered by the rehearsal's GKE (`gke.py`) when the spec has GKE
node pools; the other clouds' commands are recorded only. A fake never reaches a network.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import yaml

__all__ = ["FAKES", "install_fakes", "main"]

FAKES = ("helm", "flux", "argocd", "gcloud", "aws", "az", "git")
#: Wall seconds the fake gcloud waits for the rehearsal's GKE to finish an operation (a drain).
GCLOUD_WAIT = 900


def install_fakes(folder: Path, state: Path) -> None:
    """Write the fakes and a `gpuplatform` that runs this installation, into `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    state.mkdir(parents=True, exist_ok=True)
    python = sys.executable
    for name in FAKES:
        path = folder / name
        path.write_text(
            f'#!/bin/sh\nREHEARSAL_STATE={state} exec {python} -m gpuplatform.rehearse.fakes {name} "$@"\n'
        )
        path.chmod(0o755)
    own = folder / "gpuplatform"
    own.write_text(f"#!/bin/sh\nexec {python} -c 'from gpuplatform.cli import run; run()' \"$@\"\n")
    own.chmod(0o755)


def _value(args: list[str], *flags: str) -> list[str]:
    out = []
    for i, arg in enumerate(args):
        for flag in flags:
            if arg == flag and i + 1 < len(args):
                out.append(args[i + 1])
            elif arg.startswith(flag + "="):
                out.append(arg.split("=", 1)[1])
    return out


def _merge(base: object, over: object) -> object:
    if isinstance(base, dict) and isinstance(over, dict):
        return {**base, **{k: _merge(base.get(k), v) for k, v in over.items()}}
    return over


def _helm(args: list[str], state: Path) -> int:
    if not args or args[0] != "upgrade" or "--reuse-values" not in args:
        return 0
    positional = [a for a in args[1:] if not a.startswith("-")]
    release = positional[0] if positional else ""
    values: object = {}
    for path in _value(args, "-f", "--values"):
        values = _merge(values, yaml.safe_load(Path(path).read_text()) or {})
    target = state / "helm" / f"{release}.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    current = json.loads(target.read_text()) if target.exists() else {}
    # The rehearsal's controllers read this file while a runbook step runs: replace it whole.
    partial = target.with_suffix(".partial")
    partial.write_text(json.dumps(_merge(current, values)))
    partial.replace(target)
    print(f'Release "{release}" has been upgraded. Happy Helming!')
    return 0


def _gcloud(args: list[str], state: Path) -> int:
    """`gcloud container` against the rehearsal's GKE (`gke.py`) when it runs one: `node-pools
    describe` reads the pools as the API has them, any other command is a request its controller
    answers, waited for as gcloud waits for the operation."""
    folder = state / "gke"
    pools_file = folder / "pools.json"
    if args[:1] != ["container"] or not pools_file.is_file():
        return 0
    words = [a for a in args if not a.startswith("-")]
    if words[1:3] == ["node-pools", "describe"]:
        pools = json.loads(pools_file.read_text())
        if words[3] not in pools:
            print(
                f"ERROR: (gcloud.container.node-pools.describe) ResponseError: code=404, message=Not found: {words[3]}.",
                file=sys.stderr,
            )
            return 1
        print(json.dumps(pools[words[3]], indent=2))
        return 0
    if words[1:3] in (["clusters", "get-credentials"], ["node-pools", "list"]):
        return 0
    request = folder / "requests" / f"{time.time_ns():020d}-{os.getpid()}.json"
    partial = request.with_suffix(".partial")
    partial.write_text(json.dumps(args))
    partial.replace(request)
    answer = request.with_suffix(".answer")
    deadline = time.monotonic() + GCLOUD_WAIT
    while not answer.is_file():
        if time.monotonic() > deadline:
            print(
                f"ERROR: (gcloud.container) the operation did not finish in {GCLOUD_WAIT} s", file=sys.stderr
            )
            return 1
        time.sleep(0.1)
    result = json.loads(answer.read_text())
    answer.unlink()
    if result["stderr"]:
        print(result["stderr"], file=sys.stderr)
    return int(result["code"])


def main(argv: list[str]) -> int:
    name, args = argv[0], argv[1:]
    state = Path(os.environ.get("REHEARSAL_STATE", "."))
    with (state / "calls.jsonl").open("a") as out:
        out.write(json.dumps({"tool": name, "args": args, "cwd": os.getcwd()}) + "\n")
    if name == "helm":
        return _helm(args, state)
    if name == "gcloud":
        return _gcloud(args, state)
    if name == "git" and args[:1] == ["rev-parse"]:
        print((state / "merged").read_text().strip())
    if name == "flux" and args[:1] == ["reconcile"]:
        print(f"► annotating {' '.join(args[1:3])}\n✔ applied revision")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
