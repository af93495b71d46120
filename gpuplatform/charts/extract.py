"""Chart facts from a chart folder, with the real `helm template` (maintainers and tests only).

`scripts/chart-facts CHART_DIR...` writes `charts/data/<chart>-<version>.json`; the tests run the
same extraction over shared/reference/charts and compare it with the packaged data. Kinds come
from rendering the chart (`--include-crds`, as Argo CD renders) with its base values and with each
toggle of `EXTRACT_CONFIG`; defaults and read paths come from the chart's files.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gpuplatform.charts.facts import CLUSTER_SCOPED_KINDS, NAMESPACE, RBAC_KINDS, RELEASE, Component

__all__ = [
    "EXTRACT_CONFIG",
    "ExtractConfig",
    "HelmError",
    "coalesce",
    "default_values",
    "extract_facts",
    "facts_file_name",
    "facts_json",
    "find_helm",
    "helm_template",
    "static_reads",
]

_VALUES_REF = re.compile(r"\$?\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)+)")
_CRD = ("apiextensions.k8s.io", "CustomResourceDefinition")
KUBE_VERSION = "1.36.1"
#: The release and namespace facts are extracted with; in names they become `facts.RELEASE` and
#: `facts.NAMESPACE`.
_MARKER_RELEASE = "gpuplatform"
_MARKER_NAMESPACE = "chart-namespace"


class HelmError(Exception):
    """`helm template` failed; the message is helm's stderr."""


@dataclass(frozen=True)
class ExtractConfig:
    """How to extract one chart: its component, published location, base values and toggles."""

    component: Component
    repository: str
    base: dict[str, Any] = field(default_factory=dict)
    """Values without which the chart does not render at all."""
    toggles: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Values patches that add or remove kinds (one render each)."""
    extra_objects: str = ""


_DRA_BASE: dict[str, Any] = {"gpuResourcesEnabledOverride": True, "resourceApiVersion": "resource.k8s.io/v1"}
_DRA_TOGGLES: dict[str, dict[str, Any]] = {
    "computeDomainsOff": {"resources": {"computeDomains": {"enabled": False}}},
    "webhook": {"webhook": {"enabled": True}},
    "controllerNetworkPolicy": {"controller": {"networkPolicy": {"enabled": True}}},
    "kubeletPluginNetworkPolicy": {"kubeletPlugin": {"networkPolicy": {"enabled": True}}},
}

#: Per chart name. Published locations: NVIDIA/gpu-operator README (`helm repo add nvidia
#: https://helm.ngc.nvidia.com/nvidia`); kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1 docs/install.md
#: (`oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu`); v25.12.0
#: demo/clusters/openshift/README.md (`nvidia/nvidia-dra-driver-gpu` from the NGC repository).
EXTRACT_CONFIG: dict[str, ExtractConfig] = {
    "gpu-operator": ExtractConfig(
        "gpu-operator",
        "https://helm.ngc.nvidia.com/nvidia",
        toggles={
            "nfdOff": {"nfd": {"enabled": False}},
            "nodeFeatureRules": {"nfd": {"nodefeaturerules": True}},
            "nvidiaDriverCr": {"driver": {"nvidiaDriverCRD": {"enabled": True, "deployDefaultCR": True}}},
            "cleanupCrd": {"operator": {"cleanupCRD": True}},
            "upgradeCrdOff": {"operator": {"upgradeCRD": False}},
            "openshift": {"platform": {"openshift": True}},
        },
        extra_objects="extraObjects",
    ),
    "dra-driver-nvidia-gpu": ExtractConfig(
        "dra-driver", "oci://registry.k8s.io/dra-driver-nvidia/charts", _DRA_BASE, _DRA_TOGGLES
    ),
    "nvidia-dra-driver-gpu": ExtractConfig(
        "dra-driver", "https://helm.ngc.nvidia.com/nvidia", _DRA_BASE, _DRA_TOGGLES
    ),
}


def find_helm(root: Path) -> str | None:
    """helm from `.tools/bin` under `root` (installed by `.ci/setup-tools`), else from PATH."""
    local = root / ".tools" / "bin" / "helm"
    return str(local) if local.is_file() else shutil.which("helm")


def helm_template(
    helm: str,
    chart: Path,
    values: Mapping[str, Any],
    *,
    release: str = _MARKER_RELEASE,
    namespace: str = "gpuplatform",
    kube_version: str = KUBE_VERSION,
) -> list[dict[str, Any]]:
    """The documents `helm template --include-crds` renders with `values` (HelmError on failure)."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
        f.write(json.dumps(dict(values), sort_keys=True))  # JSON is YAML: helm reads it as values
        f.flush()
        args = [helm, "template", release, str(chart), "--namespace", namespace, "--include-crds"]
        args += ["--kube-version", kube_version, "--values", f.name]
        done = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        raise HelmError(done.stderr.strip())
    return [d for d in yaml.safe_load_all(done.stdout) if isinstance(d, dict)]


def coalesce(defaults: Any, override: Any) -> Any:
    """Helm's coalescing of a subchart's defaults with the parent's section: maps merge, null deletes."""
    if not isinstance(defaults, dict) or not isinstance(override, dict):
        return override
    out = dict(defaults)
    for key, value in override.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = coalesce(out.get(key), value) if isinstance(value, dict) else value
    return out


def _read_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text()) if path.is_file() else None


def _subcharts(chart: Path) -> list[tuple[str, Path, str]]:
    """(values key, folder, condition) of each dependency vendored under charts/."""
    meta = _read_yaml(chart / "Chart.yaml") or {}
    out = []
    for dep in meta.get("dependencies") or []:
        folder = chart / "charts" / dep["name"]
        if folder.is_dir():
            out.append((dep.get("alias") or dep["name"], folder, dep.get("condition") or ""))
    return out


def default_values(chart: Path) -> dict[str, Any]:
    """values.yaml with every vendored subchart's defaults coalesced under its key."""
    values: dict[str, Any] = _read_yaml(chart / "values.yaml") or {}
    for key, folder, _ in _subcharts(chart):
        values[key] = coalesce(default_values(folder), values.get(key) or {})
    return values


def static_reads(chart: Path) -> set[tuple[str, ...]]:
    """`.Values` paths referenced by the templates (subcharts' under their key) and conditions."""
    reads: set[tuple[str, ...]] = set()
    for path in sorted((chart / "templates").rglob("*")):
        if path.is_file():
            reads |= {tuple(m.group(1)[1:].split(".")) for m in _VALUES_REF.finditer(path.read_text())}
    for key, folder, condition in _subcharts(chart):
        reads |= {r if r[0] == "global" else (key, *r) for r in static_reads(folder)}
        reads |= {tuple(c.strip().split(".")) for c in condition.split(",") if c.strip()}
    return reads


def _group(doc: Mapping[str, Any]) -> str:
    api = str(doc.get("apiVersion", ""))
    return api.rsplit("/", 1)[0] if "/" in api else ""


def _kinds(
    docs: Sequence[Mapping[str, Any]], crd_scopes: Mapping[tuple[str, str], bool]
) -> set[tuple[Any, ...]]:
    kinds = set()
    for doc in docs:
        gk = (_group(doc), str(doc["kind"]))
        meta = doc.get("metadata") or {}
        if gk in CLUSTER_SCOPED_KINDS:
            namespaced = False
        elif gk in crd_scopes:
            namespaced = crd_scopes[gk]
        elif "namespace" in meta:
            namespaced = True
        else:
            raise HelmError(f"cannot tell whether {gk[1]} ({gk[0] or 'core'}) is namespaced")
        kinds.add((*gk, namespaced, _name(doc) if gk == _CRD or gk in RBAC_KINDS else ""))
    return kinds


def _name(doc: Mapping[str, Any]) -> str:
    """An object's name, the release's part as `facts.RELEASE`."""
    return _templated(str((doc.get("metadata") or {}).get("name", "")))


def _templated(name: str) -> str:
    return name.replace(_MARKER_NAMESPACE, NAMESPACE).replace(_MARKER_RELEASE, RELEASE)


def _rbac(renders: Sequence[Sequence[Mapping[str, Any]]]) -> dict[str, Any]:
    """`Kind/name` of every role any render holds -> its rules (the union over renders, in order),
    and of every binding -> the `Kind/name` of the role it binds."""
    roles: dict[str, list[Any]] = {}
    bindings: dict[str, str] = {}
    for docs in renders:
        for doc in docs:
            gk = (_group(doc), str(doc["kind"]))
            if gk not in RBAC_KINDS:
                continue
            key = f"{gk[1]}/{_name(doc)}"
            if "roleRef" in doc:
                ref = doc["roleRef"]
                bindings[key] = f"{ref['kind']}/{_templated(str(ref['name']))}"
            else:
                rules = roles.setdefault(key, [])
                rules += [r for r in doc.get("rules") or [] if r not in rules]
    return {"roles": dict(sorted(roles.items())), "bindings": dict(sorted(bindings.items()))}


def _crd_scopes(docs: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], bool]:
    return {
        (d["spec"]["group"], d["spec"]["names"]["kind"]): d["spec"]["scope"] == "Namespaced"
        for d in docs
        if (_group(d), d.get("kind")) == _CRD
    }


def extract_facts(helm: str, chart: Path) -> dict[str, Any]:
    """The facts document of the chart in folder `chart` (HelmError if it does not render)."""
    meta = _read_yaml(chart / "Chart.yaml") or {}
    config = EXTRACT_CONFIG[meta["name"]]
    patches = {"": config.base} | {name: coalesce(config.base, p) for name, p in config.toggles.items()}
    with ThreadPoolExecutor(max_workers=4) as pool:
        done = dict(
            zip(
                patches,
                pool.map(
                    lambda v: helm_template(helm, chart, v, namespace=_MARKER_NAMESPACE), patches.values()
                ),
                strict=True,
            )
        )
    base = done.pop("")
    renders = done
    scopes = _crd_scopes(base)
    for docs in renders.values():
        scopes.update(_crd_scopes(docs))
    in_base = _kinds(base, scopes)
    with_toggle = {name: _kinds(docs, scopes) for name, docs in renders.items()}
    objects = []
    for group, kind, namespaced, name in sorted(in_base.union(*with_toggle.values())):
        key = (group, kind, namespaced, name)
        entry: dict[str, Any] = {"group": group, "kind": kind, "namespaced": namespaced}
        if name:
            entry["name"] = name
        if key in in_base:
            absent = sorted(t for t, kinds in with_toggle.items() if key not in kinds)
            if absent:
                entry["absentWith"] = absent
        else:
            entry["onlyWith"] = sorted(t for t, kinds in with_toggle.items() if key in kinds)
        objects.append(entry)
    doc: dict[str, Any] = {
        "component": config.component,
        "chart": meta["name"],
        "version": str(meta["version"]),
        "repository": config.repository,
        "toggles": config.toggles,
        "objects": objects,
        "rbac": _rbac([base, *renders.values()]),
        "reads": sorted(list(r) for r in static_reads(chart)),
        "defaults": default_values(chart),
    }
    if config.extra_objects:
        doc["extraObjects"] = config.extra_objects
    return doc


def facts_file_name(doc: Mapping[str, Any]) -> str:
    """`<chart>-<version>.json`."""
    return f"{doc['chart']}-{doc['version']}.json"


def facts_json(doc: Mapping[str, Any]) -> str:
    """The committed form: sorted keys, one-space indent, trailing newline."""
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"
