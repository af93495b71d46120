"""A fake `kubectl` for the gate scripts: answers from a snapshot folder written by `Cluster.write`.

`get <resource> [-A|-n NS NAME] -o json`, `logs -n NS POD`, `delete pod -n NS POD`. A deleted pod
is gone from later answers, and its generated claim is released as the resourceclaim controller
would (NotFound), unless `FAKE_CLAIM_STUCK` is set. Every call is appended to `calls.log`.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

FOLDER = Path(os.environ["FAKE_CLUSTER"])
DELETED = FOLDER / "deleted.txt"


def _items(kind: str) -> list[dict]:  # type: ignore[type-arg]
    path = FOLDER / f"{kind}.json"
    if not path.is_file():
        print(
            f'Error from server (Forbidden): {kind} is forbidden: User "gates" cannot list resource',
            file=sys.stderr,
        )
        sys.exit(1)
    items: list[dict] = json.loads(path.read_text())["items"]  # type: ignore[type-arg]
    gone = set(DELETED.read_text().split()) if DELETED.is_file() else set()
    if kind == "pods":
        return [p for p in items if f"{p['metadata']['namespace']}/{p['metadata']['name']}" not in gone]
    if kind == "resourceclaims" and not os.environ.get("FAKE_CLAIM_STUCK"):
        released = {c for target in gone for c in _claims_of(target)}
        return [c for c in items if f"{c['metadata']['namespace']}/{c['metadata']['name']}" not in released]
    return items


def _claims_of(target: str) -> list[str]:
    namespace, _, name = target.partition("/")
    pods = json.loads((FOLDER / "pods.json").read_text())["items"]
    for pod in pods:
        if (pod["metadata"]["namespace"], pod["metadata"]["name"]) == (namespace, name):
            status = pod.get("status") or {}
            names = [s.get("resourceClaimName") for s in status.get("resourceClaimStatuses") or []]
            names.append((status.get("extendedResourceClaimStatus") or {}).get("resourceClaimName"))
            return [f"{namespace}/{n}" for n in names if n]
    return []


def main(argv: list[str]) -> int:
    with (FOLDER / "calls.log").open("a") as log:
        log.write(" ".join(argv) + "\n")
    args = [a for a in argv if not a.startswith("--request-timeout")]
    verb = args[0]
    if verb == "logs":
        namespace, pod = args[args.index("-n") + 1], args[args.index("-n") + 2]
        path = FOLDER / "logs" / f"{namespace}_{pod}.log"
        if not path.is_file():
            print(
                f'Error from server (BadRequest): container in pod "{pod}" is waiting to start',
                file=sys.stderr,
            )
            return 1
        sys.stdout.write(path.read_text())
        return 0
    if verb == "delete":
        namespace, pod = args[args.index("-n") + 1], args[args.index("-n") + 2]
        with DELETED.open("a") as f:
            f.write(f"{namespace}/{pod}\n")
        return 0
    if verb != "get":
        return 2
    kind = args[1].split(".")[0]
    items = _items(kind)
    if "-n" in args and args[args.index("-n") + 2] != "-o":
        namespace, name = args[args.index("-n") + 1], args[args.index("-n") + 2]
        found = [
            i for i in items if (i["metadata"].get("namespace"), i["metadata"]["name"]) == (namespace, name)
        ]
        if not found:
            print(f'Error from server (NotFound): {args[1]} "{name}" not found', file=sys.stderr)
            return 1
        print(json.dumps(found[0]))
        return 0
    print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
