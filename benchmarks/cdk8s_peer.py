"""The peer of `synth`: the same objects through cdk8s, as a whole process that writes its files.

Run: `python benchmarks/cdk8s_peer.py OBJECTS.json OUTDIR` — OBJECTS.json is a JSON list of the
objects `gpuplatform synth` wrote (collected by synth_speed.py before timing). The process imports
cdk8s, adds every object as an ApiObject of one Chart and synthesises one file per resource into
OUTDIR: what a cdk8s App producing the same objects does. Reading ready-made objects from JSON is
cheaper than any renderer, so this favours cdk8s.
"""

from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "1")
os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")


def main(objects_file: str, outdir: str) -> None:
    import cdk8s

    with open(objects_file, encoding="utf-8") as handle:
        objects = json.load(handle)
    app = cdk8s.App(outdir=outdir, yaml_output_type=cdk8s.YamlOutputType.FILE_PER_RESOURCE)
    chart = cdk8s.Chart(app, "fleet")
    for i, obj in enumerate(objects):
        api_object = cdk8s.ApiObject(
            chart, f"o{i}", api_version=obj["apiVersion"], kind=obj["kind"], metadata=obj.get("metadata", {})
        )
        for key, value in obj.items():
            if key not in ("apiVersion", "kind", "metadata"):
                api_object.add_json_patch(cdk8s.JsonPatch.add(f"/{key}", value))
    app.synth()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
