"""A pool selected inside a node group by labels moves node by node: its runbook commands, run
against a fake kubectl, set the DRA kubelet plugin's label only once the device plugin is gone,
whether or not the sync's `enable` Job ran before them (the operator late)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from gpuplatform.load.stacks import load_stack
from gpuplatform.plan.steps import transition_steps
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.runbook_pools import pool_actions

ROOT = Path(__file__).resolve().parents[2]

#: A kubectl with one node whose device plugin goes away after two reads of the node.
KUBECTL = """#!{python}
import json, sys
from pathlib import Path
state = Path({state!r})
args = sys.argv[1:]
with state.open("a") as log:
    log.write(json.dumps(args) + "\\n")
reads = sum(1 for line in state.read_text().splitlines() if json.loads(line)[:2] == ["get", "node/a100-01"])
if args[:2] == ["get", "nodes"]:
    print("node/a100-01")
elif args[:2] == ["get", "node/a100-01"]:
    print(json.dumps({{"status": {{"allocatable": {{"nvidia.com/mig-1g.10gb": "0", "nvidia.com/gpu": "8" if reads <= 2 else "0"}}}}}}))
"""


def test_the_dra_plugin_label_waits_for_the_device_plugin_to_go(tmp_path: Path) -> None:
    [loaded] = load_stack(ROOT / "tests" / "fleets" / "gke-production.yaml")
    plan = plan_platform(loaded.platform)
    nim, scale = plan.wave("nim"), plan.wave("scale")
    [step] = [s for s in transition_steps(plan, nim, scale) if s.action == "apply-handoff"]
    [action] = [a for a in pool_actions(plan, nim, scale, step) if "a100-whole" in a.text]
    bin_dir, calls = tmp_path / "bin", tmp_path / "calls.jsonl"
    bin_dir.mkdir()
    (bin_dir / "kubectl").write_text(KUBECTL.format(python=sys.executable, state=str(calls)))
    (bin_dir / "kubectl").chmod(0o755)
    (bin_dir / "sleep").write_text("#!/bin/sh\n")
    (bin_dir / "sleep").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    subprocess.run(["dash", "-ec", "\n".join(action.commands)], env=env, check=True, timeout=60)
    made = [json.loads(line) for line in calls.read_text().splitlines()]
    writes = [(i, [*c[:2], c[-1]]) for i, c in enumerate(made) if c[0] in ("label", "taint")]
    plugin = next(i for i, c in writes if c[-1] == "nvidia.com/dra-kubelet-plugin=true")
    reads = [i for i, c in enumerate(made) if c[:2] == ["get", "node/a100-01"]]
    assert [w[1][0] for w in writes][:2] == ["taint", "label"], "the taint, then the legacy labels' removal"
    assert len([i for i in reads if i < plugin]) == 3, (
        "the label waited for the third read (device plugin gone)"
    )
