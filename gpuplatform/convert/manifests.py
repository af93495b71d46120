"""Legacy manifests (`nvidia.com/gpu` limits) -> ResourceClaimTemplates + pod `resourceClaims`.

Files round-trip through ruamel.yaml (comments, key order and document order kept): the one
exception to the single-dumper rule, because these files belong to the teams. Only the GPU request
changes: it is removed from `limits`/`requests`, the pod gains `resourceClaims` and each GPU
container `resources.claims`. Everything else, and every document that is not a GPU workload,
is left as it was.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError

from gpuplatform.errors import InputError, Problem
from gpuplatform.load.yaml_input import parse_yaml_documents
from gpuplatform.model.base import DNS_SUBDOMAIN
from gpuplatform.validate import SchemaMissing, validate_object

__all__ = ["GPU", "Conversion", "convert_text"]

GPU = "nvidia.com/gpu"
#: kind -> path from the document to its pod spec.
POD_SPEC_PATHS: dict[str, tuple[str, ...]] = {
    "Pod": ("spec",),
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}


@dataclass
class Conversion:
    """The converted file text and the ResourceClaimTemplates it needs."""

    text: str
    templates: list[dict[str, Any]] = field(default_factory=list)
    converted: list[str] = field(default_factory=list)


def _yaml() -> YAML:
    y = YAML(typ="rt")
    y.preserve_quotes = True
    y.width = 4096
    return y


def _count(value: Any, source: str, loc: str) -> int:
    text = str(value)
    if not text.isdigit() or int(text) < 1:
        raise InputError.single(source, loc, f"{GPU} must be a whole number of GPUs, got {value!r}")
    return int(text)


def _gpu_containers(pod: dict[str, Any], source: str, loc: str) -> Iterator[tuple[CommentedMap, int]]:
    for field_name in ("initContainers", "containers"):
        for i, container in enumerate(pod.get(field_name) or []):
            resources = container.get("resources") or {}
            counts = [
                _count(resources[part][GPU], source, f"{loc}.{field_name}[{i}].resources.{part}.{GPU}")
                for part in ("limits", "requests")
                if isinstance(resources.get(part), dict) and GPU in resources[part]
            ]
            if counts:
                if len(set(counts)) > 1:
                    raise InputError.single(
                        source, f"{loc}.{field_name}[{i}].resources", f"{GPU} limits and requests differ"
                    )
                yield container, counts[0]


def _strip_gpu(container: CommentedMap) -> None:
    resources = container["resources"]
    for part in ("limits", "requests"):
        if isinstance(resources.get(part), dict) and GPU in resources[part]:
            del resources[part][GPU]
            if not resources[part]:
                del resources[part]


def _template(name: str, namespace: str | None, tier: str, count: int) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    request = {"name": "gpu", "exactly": {"deviceClassName": tier, "count": count}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": meta,
        "spec": {"spec": {"devices": {"requests": [request]}}},
    }


def _convert_workload(
    doc: CommentedMap, source: str, loc: str, tier: str, shared: bool
) -> list[dict[str, Any]]:
    node: Any = doc
    path = POD_SPEC_PATHS[doc["kind"]]
    for part in path:
        node = node.get(part) if isinstance(node, dict) else None
    if not isinstance(node, dict):
        raise InputError.single(source, f"{loc}.{'.'.join(path)}", "no pod spec")
    pod_loc = f"{loc}.{'.'.join(path)}"
    gpus = list(_gpu_containers(node, source, pod_loc))
    if not gpus:
        return []
    meta = doc.get("metadata") or {}
    name, namespace = str(meta.get("name", "")), meta.get("namespace")
    if node.get("resourceClaims"):
        raise InputError.single(
            source, f"{pod_loc}.resourceClaims", "the pod already has resource claims: convert it by hand"
        )
    claims = CommentedSeq()
    templates = []
    if shared:
        template = f"{name}-gpu"
        claims.append(CommentedMap([("name", "gpu"), ("resourceClaimTemplateName", template)]))
        templates.append(_template(template, namespace, tier, max(c for _, c in gpus)))
    for container, count in gpus:
        _strip_gpu(container)
        claim = "gpu" if shared else f"gpu-{container['name']}"
        if not shared:
            template = f"{name}-{container['name']}-gpu"
            claims.append(CommentedMap([("name", claim), ("resourceClaimTemplateName", template)]))
            templates.append(_template(template, namespace, tier, count))
        resources = container.setdefault("resources", CommentedMap())
        resources["claims"] = CommentedSeq([CommentedMap([("name", claim)])])
    node["resourceClaims"] = claims
    for t in templates:
        if not DNS_SUBDOMAIN.match(t["metadata"]["name"]) or len(t["metadata"]["name"]) > 253:
            raise InputError.single(
                source,
                f"{loc}.metadata.name",
                f"template name {t['metadata']['name']!r} is not a DNS subdomain",
            )
    return templates


def _validate(objects: list[Any], source: str, minor: str) -> None:
    problems = []
    for i, obj in enumerate(objects):
        plain = json.loads(json.dumps(obj, default=str))
        try:
            errors = validate_object(plain, minor)
        except SchemaMissing as exc:
            errors = [str(exc)]
        problems += [
            Problem(source, f"documents[{i}]", "", f"converted {plain.get('kind')} is invalid: {e}")
            for e in errors
        ]
    if problems:
        raise InputError(problems)


def convert_text(
    text: str, source: str, tier: str, *, shared: bool = True, kubernetes: str = "1.36"
) -> Conversion:
    """Convert every GPU workload of a (multi-document) YAML text; InputError on unsupported input."""
    parse_yaml_documents(text, source)  # duplicate keys, alias bombs and nesting are refused first
    y = _yaml()
    try:
        docs = list(y.load_all(text))
    except YAMLError as exc:
        raise InputError.single(source, "", f"YAML error: {exc}") from None
    result = Conversion("")
    for i, doc in enumerate(docs):
        loc = f"documents[{i}]"
        if not isinstance(doc, dict) or "kind" not in doc:
            continue
        items = doc.get("items") if doc["kind"] == "List" else [doc]
        if not isinstance(items, list):
            raise InputError.single(source, f"{loc}.items", "a List needs items")
        for j, item in enumerate(items):
            item_loc = f"{loc}.items[{j}]" if doc["kind"] == "List" else loc
            kind = item.get("kind") if isinstance(item, dict) else None
            if kind in POD_SPEC_PATHS:
                templates = _convert_workload(item, source, item_loc, tier, shared)
                if templates:
                    result.templates += templates
                    result.converted.append(f"{kind}/{item.get('metadata', {}).get('name')}")
            elif doc["kind"] == "List":
                raise InputError.single(
                    source, f"{item_loc}.kind", f"unsupported List member {kind!r}: convert it by hand"
                )
    if not result.converted:
        raise InputError.single(source, "", f"no workload requests {GPU}: nothing to convert")
    _validate([d for d in docs if isinstance(d, dict)] + result.templates, source, kubernetes)
    out = io.StringIO()
    y.dump_all(docs, out)
    result.text = out.getvalue()
    return result
