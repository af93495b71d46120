"""Synth of the fleet against cdk8s ApiObjects and a bare PyYAML C dump of the same objects.

Run: `FLEET_NODES=2000 .venv/bin/python benchmarks/synth_speed.py` — prints one JSON object.
Goals (issue 2): synth (policy rules + render + strict validation + serialisation + lock, in
memory; writing files is left out as it is the same for every renderer) at least 10x faster
than cdk8s for the same objects, and within 3x of merely dumping them with the C dumper.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import yaml

from gpuplatform.load.documents import platform_document
from gpuplatform.load.stacks import LoadedPlatform, load_stack
from gpuplatform.model.platform import Platform
from gpuplatform.output.synth import policy_findings, render_files
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.tree import render_tree

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "1")
FLEET = Path(__file__).resolve().parent / "fleet.py"


def build() -> Platform:
    """The fleet stack, loaded the way `gpuplatform synth benchmarks/fleet.py` loads it."""
    return load_stack(FLEET)[0].platform


def _objects() -> list[dict]:  # type: ignore[type-arg]
    tree = render_tree(plan_platform(build()))
    return [obj for content in tree.files.values() if isinstance(content, list) for obj in content]


def _time_synth() -> float:
    platform = build()
    loaded = LoadedPlatform(platform, "benchmarks/fleet.py", (), platform_document(platform))
    start = time.perf_counter()
    tree = render_tree(plan_platform(platform))
    policy_findings([loaded], trees={platform.name: tree})
    render_files(loaded, tree=tree)
    return time.perf_counter() - start


def _time_dump(objects: list[dict]) -> float:  # type: ignore[type-arg]
    start = time.perf_counter()
    for obj in objects:
        yaml.dump(obj, Dumper=yaml.CSafeDumper, sort_keys=False, default_flow_style=False, width=1 << 30)
    return time.perf_counter() - start


def _time_cdk8s(objects: list[dict]) -> float:  # type: ignore[type-arg]
    import cdk8s

    start = time.perf_counter()
    app = cdk8s.App()
    chart = cdk8s.Chart(app, "fleet")
    for i, obj in enumerate(objects):
        api_object = cdk8s.ApiObject(
            chart, f"o{i}", api_version=obj["apiVersion"], kind=obj["kind"], metadata=obj.get("metadata", {})
        )
        for key, value in obj.items():
            if key not in ("apiVersion", "kind", "metadata"):
                api_object.add_json_patch(cdk8s.JsonPatch.add(f"/{key}", value))
    app.synth_yaml()
    return time.perf_counter() - start


def main() -> None:
    objects = _objects()
    synth = min(_time_synth() for _ in range(3))
    dump = min(_time_dump(objects) for _ in range(3))
    cdk8s = _time_cdk8s(objects)
    print(
        json.dumps(
            {
                "fleetNodes": int(os.environ.get("FLEET_NODES", "2000")),
                "objects": len(objects),
                "synthSeconds": round(synth, 3),
                "pyyamlDumpSeconds": round(dump, 3),
                "cdk8sSeconds": round(cdk8s, 3),
                "cdk8sOverSynth": round(cdk8s / synth, 1),
                "synthOverDump": round(synth / dump, 2),
                "goals": {"cdk8sOverSynthAtLeast": 10, "synthOverDumpAtMost": 3},
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
