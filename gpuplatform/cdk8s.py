"""cdk8s interop: add a wave's objects to a user's cdk8s Chart (install `gpuplatform[cdk8s]`).

`WaveObjects` holds exactly what `synth` renders for the wave and the engine (the spec's engine by
default) and refuses what `synth` refuses: a bad spec or an unknown wave or engine (InputError,
naming the valid ones), an error-level rule not in `allow` (PolicyRefusal, carrying every finding).
cdk8s stamps the chart's namespace on every object and drops nulls; the construct removes the
namespace again from cluster-scoped kinds, so the synthesised objects equal the native renderer's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import cdk8s
import constructs

from gpuplatform.commands.wave_objects import synth_wave_objects
from gpuplatform.model.platform import Platform

__all__ = ["CLUSTER_SCOPED_KINDS", "WaveObjects"]

#: Kinds the renderer emits without a namespace.
CLUSTER_SCOPED_KINDS = frozenset(
    {
        "Node",
        "Namespace",
        "DeviceClass",
        "ResourceSlice",
        "ClusterRole",
        "ClusterRoleBinding",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "CustomResourceDefinition",
    }
)


class WaveObjects(constructs.Construct):
    """Every object engine `engine` applies for `wave` of `platform`, as cdk8s ApiObjects."""

    def __init__(
        self,
        scope: constructs.Construct,
        id: str,
        *,
        platform: Platform,
        wave: str,
        engine: str | None = None,
        allow: Sequence[str] = (),
    ) -> None:
        super().__init__(scope, id)
        source = f"cdk8s:{self.node.path}"
        objects = synth_wave_objects(platform, wave, engine=engine, allow=allow, source=source)
        chart = cdk8s.Chart.of(self)
        for obj in objects:
            meta: dict[str, Any] = obj["metadata"]
            node_id = "-".join([obj["kind"], meta.get("namespace", ""), meta["name"]])
            api_object = cdk8s.ApiObject(
                self, node_id, api_version=obj["apiVersion"], kind=obj["kind"], metadata=meta
            )
            for key, value in obj.items():
                if key not in ("apiVersion", "kind", "metadata"):
                    api_object.add_json_patch(cdk8s.JsonPatch.add(f"/{key}", value))
            if obj["kind"] in CLUSTER_SCOPED_KINDS and chart.namespace:
                api_object.add_json_patch(cdk8s.JsonPatch.remove("/metadata/namespace"))
