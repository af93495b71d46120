"""Every shell command of every runbook fails closed (issue 39).

Each `sh` block of every runbook of the bundled stacks and of `tests/fleets` (its GKE
production cluster also as an EKS and an AKS cluster) runs, as an operator pastes it, against fake
`kubectl`, `gcloud`, `aws`, `az`, `helm`, `flux` and `gpuplatform` in four modes: reads succeed,
reads fail, reads print nothing, reads return hostile values (`$(…)`, quotes, newlines, globs,
spaces). Nothing destructive may run after a read that failed or printed nothing, and a check that
passes by printing nothing says `CHECK FAILED` when its reads fail; a hostile value is never executed, globbed or split
into arguments, and never reaches a cloud's write.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuplatform.load.stacks import load_stack
from gpuplatform.plan.waves import plan_platform
from gpuplatform.rehearse.runbook import read_section
from gpuplatform.render.runbook_pools import CHECK_FAILED
from gpuplatform.render.runbooks import render_runbooks

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [
    pytest.mark.skipif(shutil.which("jq") is None, reason="the runbooks' commands read with jq"),
    pytest.mark.skipif(shutil.which("dash") is None, reason="the commands run in a POSIX shell (dash)"),
]

TOOLS = ("kubectl", "gcloud", "aws", "az", "helm", "flux", "gpuplatform", "argocd", "sleep")

#: Values a compromised or broken read may carry: each must stay one inert argument.
SPLIT, NEWLINE, QUOTE, GLOB = "spl1t w0rd", "l1ne\nbr3ak", "it'sq\"uoted", "*"
SUBST = '$(touch "$MARKER")'
HOSTILE = (SUBST, SPLIT, NEWLINE, QUOTE, GLOB, "`touch $MARKER`")

#: The fake CLIs: one script for every tool; reads answer per mode, every call is logged.
FAKE = r"""#!{python} -S
import json, os, sys
tool, args = os.path.basename(sys.argv[0]), sys.argv[1:]
mode = os.environ["FAKE_MODE"]
HOSTILE = {hostile!r}


def log(kind, outcome):
    with open(os.environ["FAKE_LOG"], "a") as f:
        f.write(json.dumps({{"tool": tool, "args": args, "kind": kind, "outcome": outcome}}) + "\n")


if tool == "sleep":
    log("other", "ok")
    os.kill(os.getppid(), 15)  # a wait loop would wait forever: stop it there
    sys.exit(0)
words = [a for a in args if not a.startswith("-")]
verb = words[0] if words else ""
READS = {{
    "kubectl": {{"get", "logs", "wait", "describe", "version"}},
    "gcloud": {{"describe", "list"}},
    "aws": {{"describe-nodegroup", "wait"}},
    "az": {{"show", "list"}},
    "helm": {{"get"}},
}}
WRITES = {{
    "kubectl": {{"cordon", "uncordon", "drain", "taint", "label", "patch", "delete", "apply", "create", "scale",
                "annotate", "replace"}},
    "gcloud": {{"create", "update", "resize", "delete"}},
    "aws": {{"create-nodegroup", "update-nodegroup-config", "delete-nodegroup"}},
    "az": {{"add", "update", "scale", "delete"}},
    "helm": {{"upgrade", "install", "uninstall"}},
}}
if tool in ("gcloud", "aws", "az"):
    verb = next((w for w in words if w in READS[tool] | WRITES[tool]), verb)
if verb in WRITES.get(tool, ()):
    log("write", "ok")
    sys.exit(0)
if verb not in READS.get(tool, ()):
    log("other", "ok")
    sys.exit(0)
if mode == "fail":
    log("read", "failed")
    print("error: the fake " + tool + " could not read", file=sys.stderr)
    sys.exit(1)
if mode == "empty":
    log("read", "empty")
    sys.exit(0)
hostile = mode == "hostile"
log("read", "hostile" if hostile else "ok")


def flag(name):
    for i, a in enumerate(args):
        if a == name:
            return args[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


labels = {{"team.example.com/owner": "ml"}}
taints = [{{"key": "team.example.com/gpu", "value": "true", "effect": "NoExecute"}}]
if hostile:
    labels.update({{f"team.example.com/h{{i}}": v for i, v in enumerate(HOSTILE)}})
    labels[HOSTILE[0]] = "x"
    taints += [{{"key": "team.example.com/t", "value": v, "effect": "NoSchedule"}} for v in HOSTILE]
GCLOUD = {{"NoSchedule": "NO_SCHEDULE", "PreferNoSchedule": "PREFER_NO_SCHEDULE", "NoExecute": "NO_EXECUTE"}}
names = [f"node-{{i}}" for i in range(2)] + (list(HOSTILE) if hostile else [])
if tool == "gcloud":
    name = words[3] if len(words) > 3 else ""
    print(json.dumps({{
        "name": name, "locations": ["z-a", "z-b"],
        "autoscaling": {{"enabled": True, "totalMinNodeCount": 1, "totalMaxNodeCount": 8}},
        "config": {{"machineType": "a3-highgpu-8g", "labels": labels,
                   "taints": [dict(t, effect=GCLOUD[t["effect"]]) for t in taints],
                   "accelerators": [{{"acceleratorType": "nvidia-h100-80gb", "acceleratorCount": "8"}}]}},
    }}))
elif tool == "aws":
    if verb == "describe-nodegroup":
        print(json.dumps({{"nodegroup": {{
            "nodegroupName": flag("--nodegroup-name"), "nodeRole": "arn:aws:iam::1:role/r", "subnets": ["s-a"],
            "scalingConfig": {{"minSize": 1, "maxSize": 6, "desiredSize": 4}},
            "labels": labels, "taints": [dict(t, effect=GCLOUD[t["effect"]]) for t in taints],
        }}}}))
elif tool == "az":
    print(json.dumps({{
        "name": flag("--name"), "vmSize": "Standard_ND96isr_H100_v5", "count": 4, "enableAutoScaling": False,
        "nodeLabels": labels, "nodeTaints": [f"{{t['key']}}={{t['value']}}:{{t['effect']}}" for t in taints],
    }}))
elif tool == "kubectl" and verb == "get":
    kind = words[1] if len(words) > 1 else ""
    output = flag("-o") or ""
    named = [w for w in words[2:]]
    if kind in ("nodes", "node") and named:
        names = named + (list(HOSTILE) if hostile else [])
    if output == "name":
        print("\n".join(f"{{kind.rstrip('s')}}/{{n}}" for n in (names if kind in ("nodes", "node") else
              (HOSTILE if hostile else []))))
    elif output.startswith("jsonpath"):
        print(" ".join(names) if "metadata.name" in output else ("8" if not hostile else HOSTILE[0]))
    elif output == "json":
        if kind == "nodepool":
            print(json.dumps({{"kind": "NodePool", "metadata": {{"name": named[0], "resourceVersion": "7"}},
                              "spec": {{"template": {{"spec": {{"taints": taints}}}}}}}}))
        else:
            items = [{{"metadata": {{"name": n, "namespace": n}}}} for n in names] if kind == "nodes" or hostile else []
            print(json.dumps({{"apiVersion": "v1", "kind": "List", "items": items}}))
    else:
        print("\n".join(names))
elif tool == "kubectl" and verb == "logs":
    print("\n".join(HOSTILE) if hostile else "ok")
"""


def _runbooks() -> Iterator[tuple[str, Path, tuple[Path, ...]]]:
    """(id, stack, overlays) of every bundled stack and fleet spec."""
    for path in sorted((ROOT / "stacks").glob("*.py")) + sorted((ROOT / "stacks").glob("*.yaml")):
        yield path.stem, path, ()
    fleet = ROOT / "tests" / "fleets" / "gke-production.yaml"
    yield "gke-production", fleet, ()
    yield "gke-staging", fleet, (ROOT / "tests" / "fleets" / "gke-staging.yaml",)


def _other_cloud(tmp_path: Path, cloud: str) -> Path:
    """The GKE production fleet as a fleet of `cloud` (names the cloud accepts)."""
    doc = yaml.safe_load((ROOT / "tests" / "fleets" / "gke-production.yaml").read_text())
    for pool in doc["spec"]["nodePools"]:
        provisioner = pool.get("provisioner") or {}
        if provisioner.get("cloud") == "gke":
            provisioner["cloud"] = cloud
            provisioner["name"] = provisioner["name"].replace("-", "")
    path = tmp_path / f"{cloud}-production.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _blocks(stack: Path, overlays: tuple[Path, ...]) -> list[str]:
    """Every `sh` block of every runbook of `stack`, once, as an operator pastes it into one shell."""
    seen: dict[str, None] = {}
    for loaded in load_stack(stack, list(overlays) or None):
        plan = plan_platform(loaded.platform)
        for text in render_runbooks(plan, {}).values():
            for block in re.findall(r"```sh\n(.*?)\n\s*```", text, re.S):
                seen["\n".join(line.strip() for line in block.splitlines())] = None
    return list(seen)


def _run(command: str, mode: str, bin_dir: Path, tmp_path: Path) -> tuple[list[dict[str, Any]], bool, str]:
    """Run one block as an operator pastes it (one shell, every line run) in a folder of its own;
    the calls it made, whether the marker was touched, and what it printed."""
    work = tmp_path / "work"
    work.mkdir(parents=True)
    (work / "GLOBBED-FILE").write_text("")
    log, marker = tmp_path / "calls.log", tmp_path / "MARKER"
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "FAKE_MODE": mode,
        "FAKE_LOG": str(log),
        "MARKER": str(marker),
        "PROJECT": "lab-project",
        "CLUSTER": "prod",
        "LOCATION": "europe-west4",
        "RESOURCE_GROUP": "rg",
    }
    done = subprocess.run(
        ["dash", "-c", command], cwd=work, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return calls, marker.exists(), done.stdout


def _hostile(arg: str) -> bool:
    """Whether `arg` carries (part of) a hostile value."""
    return arg == GLOB or any(
        part in arg for part in ("MARKER", "spl1t", "w0rd", "l1ne", "br3ak", 'sq"uoted')
    )


def _split(arg: str) -> bool:
    """Whether `arg` carries part of a hostile value without the rest (word-split or globbed)."""
    if "GLOBBED-FILE" in arg:
        return True
    return ("w0rd" in arg and SPLIT not in arg) or ("br3ak" in arg and NEWLINE not in arg)


@pytest.fixture(scope="module")
def blocks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Every block of every source's runbooks that runs more than one command (a lone command runs
    nothing after its own read), once, with the first source that has it."""
    folder = tmp_path_factory.mktemp("clouds")
    sources = [*_runbooks(), *((f"{c}-production", _other_cloud(folder, c), ()) for c in ("eks", "aks"))]
    out: dict[str, str] = {}
    for name, stack, overlays in sources:
        for block in _blocks(stack, overlays):
            if any(joint in block for joint in ("\n", "&&", ";", "$(", "|")):
                out.setdefault(block, name)
    assert {"gcloud", "aws", "az"} <= {word for block in out for word in block.split()}
    return out


@pytest.fixture(scope="module")
def fakes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    bin_dir = tmp_path_factory.mktemp("fakes") / "bin"
    bin_dir.mkdir()
    script = FAKE.format(python=sys.executable, hostile=HOSTILE)
    for tool in TOOLS:
        (bin_dir / tool).write_text(script)
        (bin_dir / tool).chmod(0o755)
    return bin_dir


@pytest.mark.parametrize("mode", ["succeed", "fail", "empty", "hostile"])
def test_nothing_destructive_runs_after_a_failed_or_hostile_read(
    mode: str, blocks: dict[str, str], fakes: Path, tmp_path: Path
) -> None:
    commands = list(blocks)
    with ThreadPoolExecutor(max_workers=4) as pool:
        runs = list(
            pool.map(lambda i: _run(commands[i], mode, fakes, tmp_path / str(i)), range(len(commands)))
        )
    writes = 0
    for command, (calls, touched, printed) in zip(commands, runs, strict=True):
        where = f"({blocks[command]}) {command}"
        assert not touched, f"a hostile value was executed by: {where}"
        bad = next((i for i, c in enumerate(calls) if c["outcome"] != "ok"), None)
        after = [c for c in calls[bad:] if c["kind"] == "write"] if bad is not None else []
        writes += sum(c["kind"] == "write" for c in calls)
        if mode in ("fail", "empty"):
            assert not after, f"{after[0]} ran after a {mode} read in: {where}"
        if mode == "fail" and CHECK_FAILED in command:
            # a check whose pass is "prints nothing" says when it could not read
            assert CHECK_FAILED in printed, f"a check printed nothing although its reads failed: {where}"
        if mode == "hostile":
            cloud = [
                c for c in after if c["tool"] in ("gcloud", "aws", "az") and any(map(_hostile, c["args"]))
            ]
            assert not cloud, f"{cloud[0]} ran with hostile values read by: {where}"
            split = [c for c in calls if c["kind"] == "write" and any(_split(a) for a in c["args"])]
            assert not split, f"a hostile value was split or globbed into {split[0]} by: {where}"
    # the fakes are the ones the commands call: with reads that succeed, the writes run
    assert mode != "succeed" or writes > 0


#: kubectl verbs that print what they did ("node/x cordoned"), run as a command, not redirected.
_PRINTS = re.compile(
    r"(^|[;&|(]\s*|\b(?:then|do|else)\s+)kubectl (cordon|uncordon|drain|label|taint|annotate|apply|patch|"
    r"delete|create|scale|rollout restart)\b(?![^\n]*>\s*/dev/null)",
    re.M,
)


@pytest.mark.parametrize(
    ("stack", "overlays"), [(s, o) for _, s, o in _runbooks()], ids=[i for i, _, _ in _runbooks()]
)
def test_a_check_that_must_print_nothing_runs_nothing_that_prints(
    stack: Path, overlays: tuple[Path, ...]
) -> None:
    """A block the runbook says prints nothing is judged by its output (the operator's and the
    rehearsal's): a cordon or drain in it prints on success, and the check reads as failed."""
    found = []
    for loaded in load_stack(stack, list(overlays) or None):
        for name, text in render_runbooks(plan_platform(loaded.platform), {}).items():
            for heading in re.findall(r"^## (.*)$", text, re.M):
                section = read_section(text, heading)
                assert section is not None
                for item in (*section.before, *section.sync, *section.after):
                    found += [
                        f"{name} {heading}: {m.group(0).strip()} under {b.text[:80]!r}"
                        for b in item.blocks
                        if b.expects_nothing and (m := _PRINTS.search(b.script))
                    ]
    assert not found
