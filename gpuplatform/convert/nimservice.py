"""A team's NIMService manifest -> its blue/green successor with `spec.draResources`.

Same round-trip rules as `manifests.py`: the file keeps its comments and order; the copy gets the
new name, loses its `nvidia.com/gpu` limits and requests, gains the `draResources` the spec chose
and the DRA pools' taint tolerations (the NIM Operator gives its pods `spec.tolerations`; without
them the new service's pods stay Pending beside every DRA node), and mounts its own NIMCache (`spec.storage.nimCache.name`): engine profiles are built per GPU
product and an RWO cache volume mounts on one node, so blue and green never share one. The original
stays as it is: it is removed by its owner in a later wave.
"""

from __future__ import annotations

import io
import json
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from gpuplatform.convert.aliases import unshare
from gpuplatform.convert.manifests import add_tolerations
from gpuplatform.errors import InputError
from gpuplatform.labels import GPU_RESOURCE
from gpuplatform.load.yaml_input import parse_yaml_documents

__all__ = ["convert_nimservice"]

KIND = ("apps.nvidia.com/v1alpha1", "NIMService")


def convert_nimservice(
    text: str,
    source: str,
    name: str,
    dra_resources: list[dict[str, Any]],
    cache: str,
    tolerations: list[dict[str, Any]],
) -> str:
    """The converted NIMService document (InputError when the file holds no single NIMService)."""
    parse_yaml_documents(text, source)
    y = YAML(typ="rt")
    y.preserve_quotes = True
    y.width = 4096
    try:
        docs = list(y.load_all(text))
    except YAMLError as exc:
        raise InputError.single(source, "", f"YAML error: {exc}") from None
    found = [d for d in docs if isinstance(d, dict) and (d.get("apiVersion"), d.get("kind")) == KIND]
    if len(found) != 1:
        raise InputError.single(source, "", f"expected one {KIND[1]} ({KIND[0]}), found {len(found)}")
    doc = found[0]
    unshare(doc)
    if "draResources" in (doc.get("spec") or {}):
        raise InputError.single(
            source, "spec.draResources", "already set (and immutable): nothing to convert"
        )
    doc["metadata"]["name"] = name
    resources = (doc.get("spec") or {}).get("resources") or {}
    for part in ("limits", "requests"):
        if isinstance(resources.get(part), dict):
            resources[part].pop(GPU_RESOURCE, None)
            if not resources[part]:
                del resources[part]
    if "resources" in doc["spec"] and not doc["spec"]["resources"]:
        del doc["spec"]["resources"]
    doc["spec"]["draResources"] = json.loads(json.dumps(dra_resources))
    add_tolerations(doc["spec"], [], tolerations)
    storage = doc["spec"].get("storage")
    if isinstance(storage, dict) and isinstance(storage.get("nimCache"), dict):
        storage["nimCache"]["name"] = cache
    out = io.StringIO()
    y.dump(doc, out)
    return out.getvalue()
