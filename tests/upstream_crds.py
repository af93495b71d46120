"""The upstream CRDs of every custom kind the output holds, at the minimum and the newest supported
release, applied as the API server applies them.

Newest: the verbatim copies in shared/reference/crds (their README gives each tag); the Kueue CRDs
at `KUEUE_DEFAULT`. Minimum: Argo CD `ARGOCD_MINIMUM`, Flux `FLUX_MINIMUM` (the controllers of its
release, `tests/flux_crds.py`), Kueue `KUEUE_V1BETA2_SINCE`, Karpenter 1.0.0 (the first
`karpenter.sh/v1`), from the CRD cache `scripts/upstream-crds` writes from the Go module proxy
(`tests/crd_cache.py`); the NIM Operator has one modelled release (`NIM_OPERATOR_MODELLED`), which
is both. Without the cache a test that needs it skips and says so (fails in CI).

What the API server checks and `crd_errors` does too: the structural schema under strict field
validation (kubectl's default: unknown fields refused), `nullable`, `x-kubernetes-int-or-string`,
list types `map` (unique keys) and `set` (unique items), and every `x-kubernetes-validations` rule
evaluated by the project's CEL engine with `self` bound to the value the rule sits on. Transition
rules (those reading `oldSelf`) apply to updates only and are left out, as on a create.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import jsonschema_rs
import yaml

from gpuplatform.cel.errors import CelError
from gpuplatform.cel.interpreter import evaluate
from gpuplatform.cel.runtime import EvalError
from gpuplatform.cel.syntax import parse
from gpuplatform.versions import ARGOCD_MINIMUM, FLUX_MINIMUM, KUEUE_DEFAULT, KUEUE_V1BETA2_SINCE
from tests.conftest import SHARED
from tests.crd_cache import upstream_file
from tests.flux_crds import KINDS, flux_crd, strict

CRDS = SHARED / "reference" / "crds"
KARPENTER_MINIMUM = "1.0.0"

#: kind -> the file of shared/reference/crds (the newest supported release).
SHARED_FILES: dict[str, str] = {
    "Application": "application-crd.yaml",
    "AppProject": "appproject-crd.yaml",
    "ApplicationSet": "applicationset-crd.yaml",
    "HelmRelease": "helm.toolkit.fluxcd.io_helmreleases.yaml",
    "HelmRepository": "source.toolkit.fluxcd.io_helmrepositories.yaml",
    "OCIRepository": "source.toolkit.fluxcd.io_ocirepositories.yaml",
    "GitRepository": "source.toolkit.fluxcd.io_gitrepositories.yaml",
    "Kustomization": "kustomize.toolkit.fluxcd.io_kustomizations.yaml",
    "NodePool": "karpenter.sh_nodepools.yaml",
    "NIMService": "apps.nvidia.com_nimservices.yaml",
}
#: kind -> (CRD cache entry, file) of the Kueue, Argo CD and Karpenter CRDs read at a tag.
CACHED_FILES: dict[str, tuple[str, str]] = {
    "ClusterQueue": ("kueue", "kueue.x-k8s.io_clusterqueues.yaml"),
    "LocalQueue": ("kueue", "kueue.x-k8s.io_localqueues.yaml"),
    "ResourceFlavor": ("kueue", "kueue.x-k8s.io_resourceflavors.yaml"),
    "Application": ("argo-cd", "application-crd.yaml"),
    "AppProject": ("argo-cd", "appproject-crd.yaml"),
    "ApplicationSet": ("argo-cd", "applicationset-crd.yaml"),
    "NodePool": ("karpenter", "karpenter.sh_nodepools.yaml"),
}
FLUX_KINDS = tuple(KINDS)
#: The API groups whose objects `crd_errors` judges (every custom kind the output holds but the
#: tool's own hand-off kinds and the PrometheusRule, whose operator has no supported-version policy
#: here: those keep the project's schemas).
UPSTREAM_GROUPS = (
    "argoproj.io",
    "helm.toolkit.fluxcd.io",
    "source.toolkit.fluxcd.io",
    "kustomize.toolkit.fluxcd.io",
    "kueue.x-k8s.io",
    "karpenter.sh",
    "apps.nvidia.com",
)


def _load(text: str) -> dict[str, Any]:
    """A CRD document (libyaml: the Argo CD CRDs are megabytes)."""
    crd: dict[str, Any] = yaml.load(text, Loader=yaml.CSafeLoader)
    return crd


@cache
def upstream_crd(kind: str, release: str) -> dict[str, Any]:
    """The CRD of `kind` at `release`: "newest", "minimum", or for Flux's kinds a Flux release of
    `tests/flux_crds.py`."""
    if kind in FLUX_KINDS:
        if release == "newest":
            return _load((CRDS / SHARED_FILES[kind]).read_text())
        return flux_crd(str(FLUX_MINIMUM) if release == "minimum" else release, kind)
    if kind in ("ClusterQueue", "LocalQueue", "ResourceFlavor"):
        tag = KUEUE_DEFAULT if release == "newest" else str(KUEUE_V1BETA2_SINCE)
        return upstream_file(CACHED_FILES[kind][0], f"v{tag}", CACHED_FILES[kind][1])
    if release == "minimum" and kind in CACHED_FILES:
        tag = str(ARGOCD_MINIMUM) if CACHED_FILES[kind][0] == "argo-cd" else KARPENTER_MINIMUM
        return upstream_file(CACHED_FILES[kind][0], f"v{tag}", CACHED_FILES[kind][1])
    return _load((CRDS / SHARED_FILES[kind]).read_text())


def _openapi_to_jsonschema(schema: Any) -> Any:
    """OpenAPI v3 `nullable` as JSON Schema's null type; the rest is already JSON Schema."""
    if isinstance(schema, list):
        return [_openapi_to_jsonschema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _openapi_to_jsonschema(v) if k != "enum" else v for k, v in schema.items()}
    if out.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
    return out


@cache
def _schema(kind: str, release: str, version: str) -> dict[str, Any] | None:
    for v in upstream_crd(kind, release)["spec"]["versions"]:
        if v["name"] == version and v.get("served"):
            raw: dict[str, Any] = v["schema"]["openAPIV3Schema"]
            return raw
    return None


@cache
def _validator(kind: str, release: str, version: str) -> jsonschema_rs.Validator:
    raw = _schema(kind, release, version)
    assert raw is not None
    schema = _openapi_to_jsonschema(strict(raw))
    schema["properties"]["metadata"] = {"type": "object"}
    return jsonschema_rs.Draft7Validator(schema)


def _path(parts: list[str | int] | tuple[str | int, ...]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts).lstrip(".")


def _rule_errors(value: Any, schema: dict[str, Any], at: list[str | int]) -> list[str]:
    found: list[str] = []
    for rule in schema.get("x-kubernetes-validations") or []:
        if "oldSelf" in rule["rule"]:
            continue
        try:
            ok = evaluate(parse(rule["rule"]), {"self": value}, 10**9)
        except (CelError, EvalError) as error:
            found.append(f"{_path(at)}: rule {rule['rule']!r} failed to evaluate: {error}")
            continue
        if ok is not True:
            found.append(f"{_path(at)}: {rule.get('message') or rule['rule']}")
    return found


def _list_errors(value: list[Any], schema: dict[str, Any], at: list[str | int]) -> list[str]:
    kind = schema.get("x-kubernetes-list-type")
    if kind == "map":
        keys = [tuple(json.dumps(i.get(k)) for k in schema["x-kubernetes-list-map-keys"]) for i in value]
    elif kind == "set":
        keys = [(json.dumps(i, sort_keys=True),) for i in value]
    else:
        return []
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    return [f"{_path(at)}: duplicate entries for key {', '.join(k)} (list type {kind})" for k in repeated]


def _walk(value: Any, schema: dict[str, Any], at: list[str | int]) -> list[str]:
    """The list-type and CEL findings of `value` and everything under it."""
    found = _rule_errors(value, schema, at)
    if isinstance(value, list):
        found += _list_errors(value, schema, at)
        if isinstance(schema.get("items"), dict):
            for i, item in enumerate(value):
                found += _walk(item, schema["items"], [*at, i])
    elif isinstance(value, dict):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            if key in properties:
                found += _walk(item, properties[key], [*at, key])
            elif isinstance(extra, dict):
                found += _walk(item, extra, [*at, key])
    return found


def crd_errors(obj: dict[str, Any], release: str) -> list[str]:
    """Every reason the API server of a cluster with the `release` CRDs would refuse `obj`."""
    kind, version = obj["kind"], obj["apiVersion"].split("/")[1]
    if _schema(kind, release, version) is None:
        return [f"{kind} {obj['apiVersion']} is not served by the {release} CRD"]
    found = [
        f"{_path(e.instance_path)}: {e.message}" for e in _validator(kind, release, version).iter_errors(obj)
    ]
    raw = _schema(kind, release, version)
    assert raw is not None
    body = {k: v for k, v in obj.items() if k != "metadata"}
    return found + _walk(
        body, {**raw, "properties": {k: v for k, v in raw["properties"].items() if k != "metadata"}}, []
    )
