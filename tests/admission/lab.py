"""A lab platform with every admission scenario of issue 13, and its rendered policies per wave."""

from __future__ import annotations

from typing import Any

import yaml

from gpuplatform.model import Platform
from gpuplatform.plan.waves import Plan, plan_platform
from gpuplatform.render.tree import render_tree
from tests.specs import minimal_spec

HOPPER = "hopper.lab.example.com"
FULL = "full.lab.example.com"
NIM_OPERATOR = "system:serviceaccount:nim-operator:k8s-nim-operator"
CLAIM_CONTROLLER = "system:serviceaccount:kube-system:resource-claim-controller"
ARGOCD = "system:serviceaccount:argocd:argocd-application-controller"
FLUX = "system:serviceaccount:flux-system:kustomize-controller"
TENANT_SA = "system:serviceaccount:team-a:gitops-deployer"


#: A StatefulSet of 3 pods x 1 GPU in team-a that moves in `claims` (no rollout surge).
DB_WORKLOAD = {
    "kind": "StatefulSet",
    "namespace": "team-a",
    "name": "db",
    "gpus": 1,
    "replicas": 3,
    "tier": "full",
    "movesIn": "claims",
}


def lab_spec(**changes: Any) -> dict[str, Any]:
    """Two tenants (team-b enabled later), a NIM service and a workload in team-a, a bridge."""
    doc = minimal_spec()
    spec = doc["spec"]
    spec["delivery"]["engines"] = ["argocd", "flux"]
    spec["tiers"] = [
        {"name": "full", "deviceType": "gpu"},
        {"name": "hopper", "architecture": "Hopper"},
    ]
    spec["bridges"] = [{"name": "legacy-bridge"}]
    spec["tenants"] = [
        {
            "name": "team-a",
            "tiers": ["full", "hopper"],
            "groups": ["team-a-ops"],
            "owner": "ml-platform",
            "costCenter": "cc-42",
            "quota": {"gpus": 0, "legacyWorkloads": True},  # device-plugin GPUs only while they run
            "claimTemplates": [
                {"name": "one-gpu", "tier": "full"},
                {
                    "name": "sxm",
                    "tier": "hopper",
                    "selectors": [
                        "device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA H100')"
                    ],
                },
            ],
        },
        {"name": "team-b", "tiers": ["full"]},
    ]
    spec["tenantPolicy"] = {"adminGroups": ["platform-admins"], "allowNamespaces": ["research"]}
    spec["nimServices"] = [
        {
            "name": "llm-dra",
            "namespace": "team-a",
            "replaces": "llm",
            "tier": "hopper",
            "attributeSelectors": [
                {"key": "architecture", "value": "Hopper"},
                {
                    "key": "driverVersion",
                    "op": "GreaterThanOrEqual",
                    "value": "580.0.0",
                    "valueType": "version",
                },
            ],
            "capacitySelectors": [{"key": "memory", "op": "GreaterThanOrEqual", "value": "1024Mi"}],
            "movesIn": "nim",
        }
    ]
    spec["workloads"] = [
        {
            "kind": "Deployment",
            "namespace": "team-a",
            "name": "trainer",
            "gpus": 2,
            "replicas": 4,
            "tier": "full",
            "movesIn": "app",
        }
    ]
    spec["waves"] = [
        {"name": "base", "stage": "baseline"},
        {"name": "pilot", "stage": "pilot-pool"},
        {
            "name": "claims",
            "stage": "native-claim-pilot",
            "tiers": ["full", "hopper"],
            "tenants": ["team-a"],
            "bridges": ["legacy-bridge"],
        },
        {"name": "nim", "stage": "nim-non-production"},
        {"name": "app", "stage": "scale", "tenants": ["team-b"]},
        {"name": "cutover", "stage": "final-cutover"},
    ]
    for key, value in changes.items():
        spec[key] = value
    return doc


def lab_platform(**changes: Any) -> Platform:
    return Platform.model_validate({"name": "lab", **lab_spec(**changes)["spec"]})


def layer_objects(plan: Plan, wave: str, layer: str) -> list[dict[str, Any]]:
    """The objects the rendered tree puts under `waves/<NN>-<wave>/<layer>/` (any depth)."""
    prefix = f"waves/{plan.wave(wave).dir_name}/{layer}/"
    files = render_tree(plan).files
    return [
        doc
        for path, docs in sorted(files.items())
        if path.startswith(prefix) and not path.endswith("kustomization.yaml") and isinstance(docs, list)
        for doc in docs
    ]


def lab_plan(**changes: Any) -> Plan:
    return plan_platform(lab_platform(**changes))


#: The ResourceClaimTemplate the NIM Operator (v3.1.2) creates for `llm-dra`: its
#: `manifests/resourceclaimtemplate.yaml` with the expressions written out as Go's `BuildExpr`
#: prints them (`%q` strings, `resource.Quantity.String()`: 1024Mi is written 1Gi), unquoted.
NIM_OPERATOR_TEMPLATE = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: claimtemplate-9c5d7ff0b1a3-0
  namespace: team-a
  labels:
    app.kubernetes.io/name: llm-dra
spec:
  metadata:
    labels:
      app.kubernetes.io/name: llm-dra
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          allocationMode: ExactCount
          count: 1
          deviceClassName: hopper.lab.example.com
          selectors:
          - cel:
              expression: device.driver == "gpu.nvidia.com"
          - cel:
              expression: device.attributes["gpu.nvidia.com"].architecture == "Hopper"
          - cel:
              expression: (device.attributes["gpu.nvidia.com"].driverVersion).compareTo(semver("580.0.0")) >= 0
          - cel:
              expression: (device.capacity["gpu.nvidia.com"].memory).compareTo(quantity("1Gi")) >= 0
"""


def nim_operator_template(*replacements: tuple[str, str]) -> dict[str, Any]:
    """NIM_OPERATOR_TEMPLATE, parsed, with (old, new) text replacements applied first."""
    text = NIM_OPERATOR_TEMPLATE
    for old, new in replacements:
        text = text.replace(old, new)
    loaded: dict[str, Any] = yaml.safe_load(text)
    return loaded
