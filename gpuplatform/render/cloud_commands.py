"""The cloud's own command that gives a node group a wave's `NodePoolHandoff`, keeping what its owner has.

A node group's Kubernetes labels and taints are the cloud's configuration of the group, applied to
every node it creates (repair, upgrade, autoscale), so the hand-off is applied there, not to Nodes:

- EKS merges by key: `aws eks update-nodegroup-config --labels addOrUpdateLabels=…,removeLabels=…
  --taints addOrUpdateTaints=…,removeTaints=…` (AWS CLI `eks update-nodegroup-config`; taint effects
  are `NO_SCHEDULE`, `PREFER_NO_SCHEDULE`, `NO_EXECUTE`).
- GKE and AKS replace the whole set: `gcloud container node-pools update NAME --node-labels=k=v,…`
  and `--node-taints=k=v:Effect,…` set the desired labels and taints of the pool (GKE "Update
  Kubernetes node labels and taints for node pools"); `az aks nodepool update --labels k=v …
  --node-taints k=v:Effect,…` likewise. So the value is built from the live group
  (`gcloud container node-pools describe` `config.labels` / `config.taints`, `az aks nodepool show`
  `nodeLabels` / `nodeTaints`): the owner's labels and taints kept, the hand-off's set and removed.

The cluster is named by shell variables the operator sets: `CLUSTER` (all), `LOCATION` (GKE),
`RESOURCE_GROUP` (AKS).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence

__all__ = ["CLOUD_VARIABLES", "node_group_update"]

#: The shell variables each cloud's command reads.
CLOUD_VARIABLES = {"eks": ("CLUSTER",), "gke": ("CLUSTER", "LOCATION"), "aks": ("CLUSTER", "RESOURCE_GROUP")}

_EKS_EFFECT = {
    "NoSchedule": "NO_SCHEDULE",
    "PreferNoSchedule": "PREFER_NO_SCHEDULE",
    "NoExecute": "NO_EXECUTE",
}


def _taint_text(taint: Mapping[str, str]) -> str:
    """`key=value:Effect` (or `key:Effect`), the form gcloud and az take."""
    value = f"={taint['value']}" if taint.get("value") else ""
    return f"{taint['key']}{value}:{taint['effect']}"


def _json(value: object) -> str:
    return shlex.quote(json.dumps(value, separators=(",", ":"), sort_keys=True))


def _eks(
    name: str,
    labels: Mapping[str, str],
    remove: Sequence[str],
    taints: Sequence[Mapping[str, str]],
    remove_taints: Sequence[Mapping[str, str]],
) -> str:
    def eks_taint(t: Mapping[str, str]) -> dict[str, str]:
        value = {"value": t["value"]} if t.get("value") else {}
        return {**value, "key": t["key"], "effect": _EKS_EFFECT[t["effect"]]}

    label_update: dict[str, object] = {"addOrUpdateLabels": dict(labels)}
    if remove:
        label_update["removeLabels"] = list(remove)
    taint_update: dict[str, object] = {}
    if taints:
        taint_update["addOrUpdateTaints"] = [eks_taint(t) for t in taints]
    if remove_taints:
        taint_update["removeTaints"] = [eks_taint(t) for t in remove_taints]
    return (
        f'aws eks update-nodegroup-config --cluster-name "$CLUSTER" --nodegroup-name {name} '
        f"--labels {_json(label_update)} --taints {_json(taint_update)}"
    )


def _jq_labels(at: str, labels: Mapping[str, str], remove: Sequence[str], sep: str) -> str:
    """jq: the live labels with the hand-off's set and removed, as `k=v` joined by `sep`."""
    return (
        f"({at} // {{}}) + {json.dumps(dict(labels), sort_keys=True)} | del(.[{json.dumps(list(remove))}[]]) "
        f'| to_entries | map("\\(.key)=\\(.value)") | join("{sep}")'
    )


def _jq_taints(
    at: str, taint_of: str, taints: Sequence[Mapping[str, str]], remove_taints: Sequence[Mapping[str, str]]
) -> str:
    """jq: the live taints (as `k=v:Effect`) without the hand-off's, then its own added, comma-joined."""
    gone = sorted({_taint_text(t) for t in [*taints, *remove_taints]})
    add = sorted(_taint_text(t) for t in taints)
    return f'(({at} // []) | map({taint_of})) - {json.dumps(gone)} + {json.dumps(add)} | join(",")'


_GKE_TAINT = (
    '"\\(.key)\\(if (.value // "") != "" then "=" + .value else "" end):'
    '\\({"NO_SCHEDULE":"NoSchedule","PREFER_NO_SCHEDULE":"PreferNoSchedule","NO_EXECUTE":"NoExecute"}[.effect])"'
)


def node_group_update(
    cloud: str,
    name: str,
    labels: Mapping[str, str],
    remove: Sequence[str],
    taints: Sequence[Mapping[str, str]],
    remove_taints: Sequence[Mapping[str, str]],
) -> tuple[str, ...]:
    """The commands that give node group `name` of `cloud` the hand-off's labels and taints."""
    if cloud == "eks":
        return (_eks(name, labels, remove, taints, remove_taints),)
    if cloud == "gke":
        where = f'{name} --cluster="$CLUSTER" --location="$LOCATION"'
        live = f"gcloud container node-pools describe {where} --format=json"
        return (
            f"labels=$({live} | jq -r {shlex.quote(_jq_labels('.config.labels', labels, remove, ','))})",
            f"taints=$({live} | jq -r {shlex.quote(_jq_taints('.config.taints', _GKE_TAINT, taints, remove_taints))})",
            f'gcloud container node-pools update {where} --node-labels="$labels"',
            f'gcloud container node-pools update {where} --node-taints="$taints"',
        )
    if cloud == "aks":
        where = f'--resource-group "$RESOURCE_GROUP" --cluster-name "$CLUSTER" --name {name}'
        live = f"az aks nodepool show {where} -o json"
        return (
            f"labels=$({live} | jq -r {shlex.quote(_jq_labels('.nodeLabels', labels, remove, ' '))})",
            f"taints=$({live} | jq -r {shlex.quote(_jq_taints('.nodeTaints', '.', taints, remove_taints))})",
            f'az aks nodepool update {where} --labels $labels --node-taints "$taints"',
        )
    raise ValueError(f"no node-group command for cloud {cloud!r}")
