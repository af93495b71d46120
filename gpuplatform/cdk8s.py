"""cdk8s interop: add a wave's objects to a user's cdk8s Chart (install `gpuplatform[cdk8s]`).

cdk8s stamps the chart's namespace on every object and drops nulls; this construct removes the
namespace again from cluster-scoped kinds, so the synthesised objects equal the native renderer's.
"""

from __future__ import annotations

from typing import Any

import cdk8s
import constructs

from gpuplatform.model.platform import Platform
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.wave_objects import wave_objects

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
    """Every object of `wave` of `platform`, as cdk8s ApiObjects under this construct."""

    def __init__(
        self,
        scope: constructs.Construct,
        id: str,
        *,
        platform: Platform,
        wave: str,
        engine: str | None = None,
    ) -> None:
        super().__init__(scope, id)
        chart = cdk8s.Chart.of(self)
        for obj in wave_objects(plan_platform(platform), wave, engine=engine):
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
