"""A gate Job of the simulated sync, judged by the program its rendered script gives jq.

The gate Job runs `sh <script>` from the programs ConfigMap it mounts (`render/gate_jobs.py`). The
simulator reads that script as it was applied, takes the jq program the script hands to jq (its
`PROGRAM=` word, read as sh reads it) and runs it, with the jq binding, on the snapshot
`gpuplatform snapshot` would take of the model's cluster (`snapshot.py`) and the facts the Job
mounts: an edit to the program in the tree is an edit to the verdict. A Job whose command is not a
script of an applied ConfigMap with a verdict program is no gate the model can judge: it is taken to
finish at once, as `true` would, and the invariants judge what then happens. The shell around the
program (reading with kubectl, retrying, releasing probes) runs for real in `gpuplatform rehearse`;
here its release is modelled (`jobs.py`).

A group of identical nodes says the same of each of its nodes, so the program reads one node per
group and each pool's coverage is counted on the group's nodes (`_pools`): the verdict is the one
the program gives on every node, the lines name one node per group.
"""

from __future__ import annotations

import hashlib
import shlex
from contextlib import suppress
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise
from typing import Any

import jq

from gpuplatform.evidence.verdict import jq_input
from gpuplatform.render.meta import Obj
from gpuplatform.simulate.snapshot import cluster_snapshot
from gpuplatform.simulate.snapshot_nodes import summarised_slices
from gpuplatform.simulate.world import World
from gpuplatform.snapshot.read import Snapshot

__all__ = ["GateProgram", "gate_lines", "gate_program", "holds", "mounted_file"]

_SCRIPT_FACTS = "facts"
#: How many program runs `_output` keeps (a run is a few lines; the input is kept as its digest).
_RUNS_KEPT = 8192
_RUNS: dict[tuple[str, tuple[str, ...], bytes], tuple[str, ...]] = {}


@dataclass(frozen=True)
class GateProgram:
    """The gate a Job's script says it is (`GATE=`), the jq program it runs (`PROGRAM=`), the kinds
    it reads (its `--slurpfile` files but the facts and the logs) and the program that picks the pods
    whose logs it reads (`LOG_PODS=`, empty when it reads none)."""

    gate: str
    program: str
    kinds: tuple[str, ...]
    log_pods: str = ""


def holds(lines: list[str]) -> bool:
    """The gate script's verdict: it holds when the program says no `violation:` or `unknown:` line."""
    return not any(line.startswith(("violation: ", "unknown: ")) for line in lines)


@lru_cache(maxsize=64)
def _words(script: str) -> tuple[str, ...]:
    """The script's words as sh reads them (quotes removed), up to any it cannot read."""
    lexer = shlex.shlex(script, posix=True, punctuation_chars=False)
    lexer.whitespace_split = True
    lexer.commenters = ""
    out: list[str] = []
    with suppress(ValueError):
        out.extend(lexer)
    return tuple(out)


def _assignments(words: tuple[str, ...]) -> dict[str, str]:
    """The `NAME=value` words, the first of each name."""
    out: dict[str, str] = {}
    for word in words:
        name, sep, value = word.partition("=")
        if sep and name.isidentifier() and name.isupper():
            out.setdefault(name, value)
    return out


def mounted_file(world: World, pod: Obj, path: str) -> str | None:
    """The text at `path` in the pod's first container, when a ConfigMap volume applied in the model
    holds it (None otherwise: the pod would wait for its volume, or read no such file)."""
    container = (pod.get("containers") or [{}])[0]
    volumes = {v.get("name"): v for v in pod.get("volumes") or []}
    namespace = pod.get("namespace", "")
    for mount in container.get("volumeMounts") or []:
        folder = str(mount.get("mountPath", "")).rstrip("/")
        if not folder or not path.startswith(folder + "/"):
            continue
        source = (volumes.get(mount.get("name")) or {}).get("configMap") or {}
        found = world.cluster.objects.get(f"ConfigMap/{namespace}/{source.get('name')}")
        key = path[len(folder) + 1 :]
        items = {i.get("path"): i.get("key") for i in source.get("items") or []}
        if items:
            key = items.get(key, "")
        text = ((found or {}).get("data") or {}).get(key)
        return text if isinstance(text, str) else None
    return None


def gate_program(world: World, job: Obj) -> GateProgram | str | None:
    """What Job `job`'s container runs: a gate program, a reason it cannot run yet (its script's
    ConfigMap is not applied), or None when its command is no `sh <script>` with a verdict program."""
    pod = job["spec"]["template"]["spec"] | {"namespace": job["metadata"].get("namespace", "")}
    command = [*((pod.get("containers") or [{}])[0].get("command") or [])]
    command += (pod.get("containers") or [{}])[0].get("args") or []
    if len(command) != 2 or command[0] not in ("sh", "/bin/sh"):
        return None
    script = mounted_file(world, pod, str(command[1]))
    if script is None:
        return f"the script {command[1]} of Job {job['metadata']['name']} is not applied"
    words = _words(script)
    named = _assignments(words)
    if "PROGRAM" not in named or "GATE" not in named:
        return None
    slurped = {after for before, after in pairwise(words) if before == "--slurpfile"}
    kinds = tuple(sorted(slurped - {_SCRIPT_FACTS, "logs"}))
    return GateProgram(named["GATE"], named["PROGRAM"], kinds, named.get("LOG_PODS", ""))


def _pools(world: World, pools: list[dict[str, Any]], nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each pool of the facts with its nodes as one node per group: a named node stands for its group,
    a pool found by labels needs `minNodes` nodes in the groups it matches."""
    size = {g.nodes[0]: len(g.nodes) for g in world.cluster.groups}
    labels = {n["metadata"]["name"]: n["metadata"]["labels"] for n in nodes}
    out = []
    for pool in pools:
        if pool["names"]:
            mine = [g for g in world.cluster.groups if g.pool == pool["name"]]
            shown = [g.nodes[0] for g in mine]
            if sum(len(g.nodes) for g in mine) != len(pool["names"]):
                modelled_nodes = {n for g in mine for n in g.nodes}
                shown += [n for n in pool["names"] if n not in modelled_nodes]
            out.append(pool | {"names": shown, "minNodes": len(shown)})
            continue
        want = pool["labels"].items()
        count = sum(n for name, n in size.items() if want and all(labels[name].get(k) == v for k, v in want))
        out.append(pool | {"minNodes": 0 if count >= pool["minNodes"] else pool["minNodes"]})
    return out


@lru_cache(maxsize=64)
def _compiled(program: str, kinds: tuple[str, ...]) -> Any:
    """`program` with the variables its script binds with `--slurpfile` (`$facts`, one per kind
    kubectl reads, `$logs`) read from the input object instead."""
    binds = "".join(f".{name} as ${name} | " for name in (_SCRIPT_FACTS, *kinds, "logs"))
    return jq.compile(f"{binds}null | {program}")


def gate_lines(world: World, gate: GateProgram, data: dict[str, Any]) -> list[str]:
    """What the gate's program says on the model's cluster now, with the Job's facts `data`; a
    program that does not compile or fails says `unknown:` (its script's verdict then fails)."""
    snapshot = cluster_snapshot(world, every_node=False)
    nodes = snapshot.kinds.get("nodes") or []
    if isinstance(data.get("pools"), list):
        # facts edited out of shape are left as they are: the program reads them so
        with suppress(KeyError, TypeError, AttributeError):
            data = data | {"pools": _pools(world, data["pools"], nodes)}
    document: dict[str, Any] = {kind: [{"items": _read(world, snapshot, kind)}] for kind in gate.kinds}
    document[_SCRIPT_FACTS] = [data]
    try:
        document["logs"] = [_logs(gate, snapshot, data)]
        return list(_output(gate.program, gate.kinds, jq_input(document)))
    except ValueError as e:
        return [f"unknown: the verdict program of gate {gate.gate} failed: {str(e).splitlines()[0]}"]


def _output(program: str, kinds: tuple[str, ...], text: str) -> tuple[str, ...]:
    """The lines jq prints running `program` on the document `text`. jq's output is a function of
    its program and its input, so a cluster the replay meets again (the same wave under the other
    engine, a rollback to it, a Job retried on an unchanged cluster) is judged by jq once per process (a program that reads
    `now` is judged at its first run)."""
    key = (program, kinds, hashlib.blake2b(text.encode(), digest_size=16).digest())
    if key not in _RUNS:
        if len(_RUNS) >= _RUNS_KEPT:
            del _RUNS[next(iter(_RUNS))]
        _RUNS[key] = tuple(str(line) for line in _compiled(program, kinds).input_text(text).all())
    return _RUNS[key]


def _read(world: World, snapshot: Snapshot, kind: str) -> list[dict[str, Any]] | None:
    """The items of `kind` as the program reads them; ResourceSlices with their devices summed up
    by kind, as `evidence` gives them to jq (`evidence/summary.py`, held equal to the programs'
    `summarised` by property tests; a summed-up slice it leaves as it is): jq parses ~25 MB/s, and
    a call spent half its time parsing every device of every slice."""
    if kind == "resourceslices":
        return [s for group in world.cluster.groups for s in summarised_slices(world, group, group.nodes[0])]
    return snapshot.kinds.get(kind)


def _logs(gate: GateProgram, snapshot: Snapshot, data: dict[str, Any]) -> dict[str, str]:
    """The logs the script collects: none without `LOG_PODS`, else those of the running pods its
    program names (`<namespace> <pod>` lines), as `kubectl logs` reads them."""
    if not gate.log_pods:
        return {}
    document = {_SCRIPT_FACTS: [data], "pods": [{"items": snapshot.kinds.get("pods") or []}]}
    named = _output(gate.log_pods, ("pods",), jq_input(document))
    logs = snapshot.runtime_logs()
    keys = [str(line).replace(" ", "/", 1) for line in named]
    return {key: logs[key] for key in keys if key in logs}
