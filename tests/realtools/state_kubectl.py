"""A `kubectl` for the runbook's "follow the engine" commands: answers `get` and `wait` from object
files in `$STATE` (`<kind>_<name>.yaml`), its JSONPath evaluated by the real kubectl
(`annotate --local -o jsonpath`, which needs no API server; `$REAL_KUBECTL`).

`wait --for=jsonpath=P=V` holds when P is V and `wait --for=condition=C` when condition C is True,
as kubectl's own waits do; the object never changes, so a wait that does not hold at once exits 1
as a timed-out one would.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def _jsonpath(kind: str, name: str, template: str) -> str:
    path = Path(os.environ["STATE"]) / f"{kind}_{name}.yaml"
    command = [
        os.environ["REAL_KUBECTL"],
        "annotate",
        "--local",
        "-f",
        str(path),
        "x=y",
        "-o",
        f"jsonpath={template}",
    ]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("--timeout")]
    if args[:2] == ["-n", args[1]]:
        args = args[2:]
    verb = args[0]
    if verb == "get":
        kind, name, output = args[1], args[2], args[args.index("-o") + 1]
        sys.stdout.write(_jsonpath(kind, name, output.removeprefix("jsonpath=")))
        return 0
    if verb == "wait":
        kind, name = args[1].split("/")
        condition = next(a for a in args if a.startswith("--for="))[len("--for=") :]
        if condition.startswith("jsonpath="):
            template, _, value = condition[len("jsonpath=") :].partition("}=")
            held = _jsonpath(kind, name, template + "}") == value
        else:
            wanted = condition.removeprefix("condition=")
            held = _jsonpath(kind, name, f'{{.status.conditions[?(@.type=="{wanted}")].status}}') == "True"
        if not held:
            print(f"error: timed out waiting for the condition on {kind}/{name}", file=sys.stderr)
        return 0 if held else 1
    print(f"state_kubectl: {verb} is not answered", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
