"""The peer of `synth`: the same objects through cdk8s, as a whole process that writes its files.

Run: `python benchmarks/cdk8s_peer.py FILES.json OUTDIR` — FILES.json maps every file `gpuplatform
synth` wrote to its objects (collected by synth_speed.py before timing). The process imports cdk8s,
adds every object as an ApiObject of one Chart, synthesises the chart, and writes the synthesised
objects to the same files under OUTDIR (PyYAML's C dumper: cdk8s's own per-resource file names
collide across waves). Reading ready-made objects from JSON is cheaper than any renderer, and
skipping validation, the lock file and the swap is cheaper than synth, so this favours cdk8s.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "1")
os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")


def main(files_json: str, outdir: str) -> None:
    import cdk8s
    import yaml

    with open(files_json, encoding="utf-8") as handle:
        files: dict[str, list[dict[str, Any]]] = json.load(handle)
    app = cdk8s.App()
    chart = cdk8s.Chart(app, "fleet")
    for i, obj in enumerate(o for objects in files.values() for o in objects):
        api_object = cdk8s.ApiObject(
            chart, f"o{i}", api_version=obj["apiVersion"], kind=obj["kind"], metadata=obj.get("metadata", {})
        )
        for key, value in obj.items():
            if key not in ("apiVersion", "kind", "metadata"):
                api_object.add_json_patch(cdk8s.JsonPatch.add(f"/{key}", value))
    synthesised = iter(chart.to_json())
    root = Path(outdir)
    for rel, objects in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        docs = [next(synthesised) for _ in objects]
        path.write_text(yaml.dump_all(docs, Dumper=yaml.CSafeDumper, sort_keys=False))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
