"""The cloud's own commands for a node group: a wave's `NodePoolHandoff`, and a takeover's copy.

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

A takeover creates a DRA node group as a copy of a live legacy one, resizes
the legacy one and, on rollback, deletes the copy. The copy's hardware and placement are read from
the live source group: jq over its `describe`/`show` builds the copy's arguments as a shell-quoted
list (`@sh`), passed on with `set --`, so an optional field the source lacks is left out.

- GKE: `gcloud container node-pools create NAME --machine-type --accelerator=type=…,count=…,
  gpu-driver-version=… (default, latest or disabled),gpu-partition-size=… --node-locations
  --num-nodes (per zone) --disk-size --disk-type --image-type --service-account --scopes --spot
  --node-labels --node-taints --enable-autoscaling --total-min-nodes --total-max-nodes` (gcloud
  reference; the total limits are GKE 1.24+ and exclude the per-zone `--min-nodes/--max-nodes`:
  "Autoscaling a cluster", which sets an existing pool's limits with `gcloud container clusters update
  CLUSTER --node-pool … --enable-autoscaling`). `gcloud container clusters resize CLUSTER --node-pool --num-nodes
  --location`: "When you resize a node pool that spans multiple zones, the new size represents the
  number of nodes in the node pool per zone", and "Resize will pick instances to remove at random".
  `gcloud container node-pools delete NAME --cluster --location` drains the nodes and waits unless
  `--async`; the gcloud-wide `--quiet` answers its prompt.
- EKS (AWS CLI): `eks create-nodegroup --cluster-name --nodegroup-name --scaling-config
  minSize=,maxSize=,desiredSize= --subnets --node-role --instance-types --ami-type --capacity-type
  --disk-size --launch-template --labels --taints` (`diskSize` must not be given with a launch
  template; `--ami-type` must not be given when the launch template's AMI is custom, which
  `describe-nodegroup` shows as `amiType: CUSTOM`: API `CreateNodegroup`, "If you specify
  launchTemplate, and your launch template uses a custom AMI, then don't specify amiType");
  `eks wait nodegroup-active` and `nodegroup-deleted` poll `describe-nodegroup` every 30 s;
  `eks update-nodegroup-config --scaling-config` resizes, `eks delete-nodegroup` deletes; an update
  is asynchronous (it returns an `Update`), so the runbook waits on `eks describe-update` until it is
  `Successful`.
- AKS (azure-cli `acs/_help.py`): `az aks nodepool add --node-vm-size --node-count --zones 1 2 3
  --node-osdisk-size --node-osdisk-type --os-sku --vnet-subnet-id --pod-subnet-id --max-pods
  --gpu-instance-profile --mode --kubernetes-version --labels k=v … --node-taints k=v:Effect,…
  --enable-cluster-autoscaler --min-count --max-count`; `--gpu-driver` copies the source's
  `gpuProfile.driver` (Microsoft Learn "Use GPUs on AKS": `--gpu-driver none` skips AKS's driver
  for the GPU Operator's); `az aks nodepool scale --node-count`, or with the autoscaler on
  `az aks nodepool update --update-cluster-autoscaler --min-count --max-count`; `az aks nodepool
  delete` waits unless `--no-wait`.

Every command that reads the live group and writes it back is one `&&` chain that fails closed: it
stops when the read fails or prints nothing, when the read is not the named group, or when a live
label or taint is one Kubernetes would refuse (jq `checked_labels`, `checked_taints`), before
anything is written; the values reach the CLI as an argument list (jq `@sh`, `eval "set -- …"`),
never split or expanded by the shell (`tests/render/test_runbooks_fail_closed.py`).

Names the clouds refuse (`model/clouds.py`, checked at load for a takeover's groups) raise here too.

The cluster is named by shell variables the operator sets: `CLUSTER` (all), `PROJECT` and
`LOCATION` (GKE), `RESOURCE_GROUP` (AKS); every GKE command names its project explicitly, and the
GKE resize counts the pool's Nodes through the kubectl context `gcloud container clusters
get-credentials` writes for that very cluster (`gke_<project>_<location>_<cluster>`), never kubectl's
current context.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping, Sequence

from gpuplatform.model.clouds import node_group_name_problem

__all__ = [
    "CLOUD_VARIABLES",
    "jq_with_defs",
    "node_group_create",
    "node_group_delete",
    "node_group_resize",
    "node_group_update",
]

#: The shell variables each cloud's command reads.
CLOUD_VARIABLES = {
    "eks": ("CLUSTER",),
    "gke": ("PROJECT", "CLUSTER", "LOCATION"),
    "aks": ("CLUSTER", "RESOURCE_GROUP"),
}

#: Kubernetes taint effects as the EKS and GKE APIs spell them.
CLOUD_TAINT_EFFECTS = {
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
        return {**value, "key": t["key"], "effect": CLOUD_TAINT_EFFECTS[t["effect"]]}

    label_update: dict[str, object] = {}
    if labels:
        label_update["addOrUpdateLabels"] = dict(labels)
    if remove:
        label_update["removeLabels"] = list(remove)
    taint_update: dict[str, object] = {}
    if taints:
        taint_update["addOrUpdateTaints"] = [eks_taint(t) for t in taints]
    if remove_taints:
        taint_update["removeTaints"] = [eks_taint(t) for t in remove_taints]
    parts = [
        f"--{flag} {_json(update)}"
        for flag, update in (("labels", label_update), ("taints", taint_update))
        if update
    ]
    return _eks_update(name, " ".join(parts))


def _eks_update(name: str, arguments: str) -> str:
    """`aws eks update-nodegroup-config` and the wait for it: the call only starts an update (AWS EKS
    API `UpdateNodegroupConfig` returns an `Update` in progress), so the chain polls `describe-update`
    until it is `Successful` and fails on `Failed` or `Cancelled` (API `Update.status`)."""
    where = _eks_where(name)
    return _chain(
        f"update=$(aws eks update-nodegroup-config {where} {arguments} --query update.id --output text)",
        '[ -n "$update" ]',
        f'while status=$(aws eks describe-update --name "$CLUSTER" --nodegroup-name {name} --update-id "$update" '
        '--query update.status --output text) && [ "$status" = InProgress ]; do sleep 30; done',
        '[ "$status" = Successful ]',
    )


#: jq: the group's live labels and taints with the hand-off's applied, as the write's arguments
#: (`@sh`). The read must be the named group, and every live label and taint one Kubernetes takes;
#: otherwise jq fails and the chain stops before anything is written.
_GKE_UPDATE = """
if type != "object" or .name != $name or (.config | type) != "object" then
  error("the describe output is not node pool \\($name): nothing changed")
else . end
| (((.config.labels // {}) | checked_labels) + $labels | del(.[$remove[]])
   | to_entries | map("\\(.key)=\\(.value)") | join(",")) as $l
| ((.config.taints // []) | map(.effect |= k8s_effect) | checked_taints
   | without_taints($gone) + $taints | map(taint_text) | join(",")) as $t
| if $taint_first then ["--node-taints=\\($t)", "--node-labels=\\($l)"]
  else ["--node-labels=\\($l)", "--node-taints=\\($t)"] end
| @sh
"""

_AKS_UPDATE = """
if type != "object" or .name != $name then error("the show output is not node pool \\($name): nothing changed")
else . end
| (((.nodeLabels // {}) | checked_labels) + $labels | del(.[$remove[]])
   | to_entries | map("\\(.key)=\\(.value)")) as $l
| ((.nodeTaints // []) | aks_taints | checked_taints
   | without_taints($gone) + $taints | map(taint_text) | join(",")) as $t
| ["--labels"] + (if $l == [] then [""] else $l end) + ["--node-taints", $t]
| @sh
"""


def node_group_update(
    cloud: str,
    name: str,
    labels: Mapping[str, str],
    remove: Sequence[str],
    taints: Sequence[Mapping[str, str]],
    remove_taints: Sequence[Mapping[str, str]],
    *,
    taint_first: bool = True,
) -> tuple[str, ...]:
    """The command that gives node group `name` of `cloud` the hand-off's labels and taints.

    GKE and AKS replace the whole set, so the command reads the live group and writes it back in one
    `&&` chain: a read that fails, prints nothing, describes another group or carries a label or
    taint Kubernetes would refuse stops it before any write, and the values reach the cloud's CLI as
    arguments (`@sh`, `set --`), never split or expanded by the shell. GKE updates labels and taints
    in two calls, the taints first when `taint_first` (the more restrictive change first); a field
    the hand-off leaves as it is is not written.
    """
    group = _checked(cloud, name)
    if cloud == "eks":
        return (_eks(group, labels, remove, taints, remove_taints),)
    args: dict[str, object] = {
        "name": name,
        "labels": dict(labels),
        "remove": list(remove),
        "taints": _k8s_taints(taints),
        "gone": _k8s_taints([*taints, *remove_taints]),
    }
    writes: tuple[str, ...]
    if cloud == "gke":
        read = f"gcloud container node-pools describe {_gke_where(group)} --format=json"
        write = f"gcloud container node-pools update {_gke_where(group)}"
        # the jq program prints both fields in the order asked for; a field the hand-off does not
        # change is not written
        fields = (("taints", bool(taints or remove_taints)), ("labels", bool(labels or remove)))
        order = fields if taint_first else fields[::-1]
        program = _GKE_UPDATE
        writes = tuple(f'{write} "${i}"' for i, (_, changed) in enumerate(order, 1) if changed)
        args["taint_first"] = taint_first
    elif cloud == "aks":
        read = f"az aks nodepool show {_aks_where(group)} -o json"
        program, writes = _AKS_UPDATE, (f'az aks nodepool update {_aks_where(group)} "$@"',)
    else:
        raise ValueError(f"no node-group command for cloud {cloud!r}")
    return (_chain(*_read_then(read, program, args, "update"), *writes),)


def _read_then(
    read: str, program: str, args: Mapping[str, object], name: str, shell: Mapping[str, str] | None = None
) -> tuple[str, ...]:
    """Read the live object into `$live`, run jq `program` on it into `$name` (a shell-quoted list),
    and set the positional parameters to that list: the chain stops when the read fails or prints
    nothing, or jq fails or prints nothing (jq 1.6 exits 0 on empty input, so emptiness is tested)."""
    return (
        f"live=$({read})",
        '[ -n "$live" ]',
        f"{name}=$(printf '%s\\n' \"$live\" | {_jq(program, args, shell)})",
        f'[ -n "${name}" ]',
        f'eval "set -- ${name}"',
    )


#: Oniguruma patterns (jq `test`) of a label key and value (apimachinery `IsQualifiedName`,
#: `IsValidLabelValue`) and of an AKS taint; `\\A` and `\\z` anchor the whole text, not a line.
_LABEL_KEY = (
    r"\A([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?\z"
)
_LABEL_VALUE = r"\A([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?\z"
_AKS_TAINT = r"\A(?<key>[^=:]+)(=(?<value>[^:]*))?:(?<effect>[A-Za-z]+)\z"

#: jq definitions the copy programs share, by name: effects in Kubernetes spelling, taints merged
#: by key and effect (the added ones replace the live ones they match, the others stay), the
#: `k=v:Effect` text gcloud and az take, and optional `--flag value` pairs dropped when the live
#: group has no value.
_JQ_DEFS = {
    "k8s_effect": f"def k8s_effect: {json.dumps({v: k for k, v in CLOUD_TAINT_EFFECTS.items()})}[.] // .;",
    "checked_labels": 'def checked_labels: if type != "object" then '
    'error("the live labels are not a mapping: nothing changed") else to_entries | map('
    f'if (.key | type == "string" and test({json.dumps(_LABEL_KEY)})) '
    f'and (.value | type == "string" and test({json.dumps(_LABEL_VALUE)})) then . else '
    'error("live label \\(.key | tojson)=\\(.value | tojson) is not a Kubernetes label: nothing changed") '
    "end) | from_entries end;",
    "aks_taints": 'def aks_taints: if type != "array" then '
    'error("the live taints are not a list: nothing changed") else map(. as $s | '
    f"[strings | capture({json.dumps(_AKS_TAINT)})] | if length == 1 then "
    ".[0] | with_entries(select(.value != null)) else "
    'error("live taint \\($s | tojson) is not key=value:Effect: nothing changed") end) end;',
    "checked_taints": 'def checked_taints: if type != "array" then '
    'error("the live taints are not a list: nothing changed") else map('
    f'if type == "object" and (.key | type == "string" and test({json.dumps(_LABEL_KEY)})) '
    f'and ((.value // "") | type == "string" and test({json.dumps(_LABEL_VALUE)})) '
    f"and (.effect as $e | {json.dumps(list(CLOUD_TAINT_EFFECTS))} | any(.[]; . == $e)) then . else "
    'error("live taint \\(tojson) is not a Kubernetes taint: nothing changed") end) end;',
    "without_taints": "def without_taints($gone): map(. as $t | select($gone | any(.key == $t.key "
    'and (.value // "") == ($t.value // "") and .effect == $t.effect) | not));',
    "with_taints": "def with_taints($add): "
    "map(select(. as $t | $add | any(.key == $t.key and .effect == $t.effect) | not)) + $add;",
    "taint_text": 'def taint_text: "\\(.key)\\(if (.value // "") != "" then "=" + .value else "" end):\\(.effect)";',
    "opt": 'def opt($flag; $v): if $v == null or $v == "" then [] else [$flag, "\\($v)"] end;',
}


def jq_with_defs(program: str) -> str:
    """`program` on one line, after the shared definitions it uses (`checked_labels`, `checked_taints`…)."""
    used = [text for name, text in _JQ_DEFS.items() if re.search(rf"\b{name}\b", program)]
    return " ".join([*used, *program.split()])


def _checked(cloud: str, name: str) -> str:
    """`name`, shell-quoted, once the cloud would accept it as a node group name."""
    problem = node_group_name_problem(cloud, name)
    if problem:
        raise ValueError(problem)
    return shlex.quote(name)


def _k8s_taints(taints: Sequence[Mapping[str, str]]) -> list[dict[str, str]]:
    """The taints as Kubernetes spells them, without an empty value."""
    return [
        {**({"value": t["value"]} if t.get("value") else {}), "key": t["key"], "effect": t["effect"]}
        for t in taints
    ]


def _jq(program: str, args: Mapping[str, object], shell: Mapping[str, str] | None = None) -> str:
    """`jq -er` running `program` (with the shared definitions), with `args` as JSON variables and
    the shell variables `shell` names (jq variable to shell variable) as JSON variables too."""
    flags = "".join(f" --argjson {k} {_json(v)}" for k, v in args.items())
    flags += "".join(f' --argjson {k} "${v}"' for k, v in (shell or {}).items())
    return f"jq -er{flags} {shlex.quote(jq_with_defs(program))}"


_GKE_COPY = """
if type != "object" or .name != $source or (.config | type) != "object" then
  error("the describe output is not node pool \\($source): nothing created")
else . end
| .config as $c | (.locations // []) as $zones | (($c.accelerators // [])[0]) as $a
| if $a == null then error("the source node pool has no accelerator: not a GPU node pool")
  elif ($zones | length) == 0 then error("the source node pool lists no zones")
  elif $nodes % ($zones | length) != 0 then
    error("\\($nodes) nodes do not split evenly over the \\($zones | length) zones of the source node pool"
      + " (gcloud --num-nodes counts nodes per zone)")
  else . end
| (($c.taints // []) | map(.effect |= k8s_effect) | checked_taints | with_taints($taints)) as $t
| ["--machine-type", $c.machineType,
   "--accelerator", ("type=\\($a.acceleratorType),count=\\($a.acceleratorCount),gpu-driver-version="
     + ({"DEFAULT": "default", "LATEST": "latest"}[$a.gpuDriverInstallationConfig.gpuDriverVersion // ""]
        // "disabled")
     + (if $a.gpuPartitionSize then ",gpu-partition-size=\\($a.gpuPartitionSize)" else "" end)),
   "--node-locations", ($zones | join(",")),
   "--num-nodes", "\\($nodes / ($zones | length))"]
  + opt("--disk-size"; $c.diskSizeGb) + opt("--disk-type"; $c.diskType) + opt("--image-type"; $c.imageType)
  + opt("--service-account"; if $c.serviceAccount == "default" then null else $c.serviceAccount end)
  + opt("--scopes"; ($c.oauthScopes // []) | join(",")) + (if $c.spot then ["--spot"] else [] end)
  + opt("--node-labels"; (($c.labels // {}) | checked_labels) + $labels | to_entries | map("\\(.key)=\\(.value)") | join(","))
  + opt("--node-taints"; $t | map(taint_text) | join(","))
  + (if $max != null or .autoscaling.enabled then
       ["--enable-autoscaling", "--total-min-nodes", "\\($nodes)", "--total-max-nodes", "\\($max // $nodes)"]
     else [] end)
| @sh
"""

_EKS_COPY = """
if .nodegroup.nodegroupName != $source then error("the describe output is not node group \\($source): nothing created")
else . end
| .nodegroup as $g
| (($g.taints // []) | map(.effect |= k8s_effect) | checked_taints | with_taints($taints)
   | map(.effect |= ({"NoSchedule": "NO_SCHEDULE", "PreferNoSchedule": "PREFER_NO_SCHEDULE",
                      "NoExecute": "NO_EXECUTE"}[.] // .))) as $t
| ["--scaling-config", "minSize=\\($nodes),maxSize=\\($max // $nodes),desiredSize=\\($nodes)",
   "--node-role", $g.nodeRole, "--subnets"] + $g.subnets
  + (if $g.instanceTypes then ["--instance-types"] + $g.instanceTypes else [] end)
  + opt("--ami-type"; if $g.amiType == "CUSTOM" then null else $g.amiType end)
  + opt("--capacity-type"; $g.capacityType)
  + (if $g.launchTemplate then
       ["--launch-template", ($g.launchTemplate | if .id then "id=\\(.id)" else "name=\\(.name)" end
                              + ",version=\\(.version)")]
     else opt("--disk-size"; $g.diskSize) end)
  + ["--labels", ((($g.labels // {}) | checked_labels) + $labels | tojson), "--taints", ($t | tojson)]
| @sh
"""

_AKS_COPY = """
if type != "object" or .name != $source then error("the show output is not node pool \\($source): nothing created")
else . end
| ((.nodeTaints // []) | aks_taints | checked_taints | with_taints($taints)) as $t
| (((.nodeLabels // {}) | checked_labels) + $labels | to_entries | map("\\(.key)=\\(.value)")) as $l
| ["--node-vm-size", .vmSize, "--node-count", "\\($nodes)"]
  + (if (.availabilityZones // []) != [] then ["--zones"] + .availabilityZones else [] end)
  + opt("--node-osdisk-size"; .osDiskSizeGb) + opt("--node-osdisk-type"; .osDiskType)
  + opt("--os-sku"; .osSku) + opt("--vnet-subnet-id"; .vnetSubnetId) + opt("--pod-subnet-id"; .podSubnetId)
  + opt("--max-pods"; .maxPods) + opt("--gpu-instance-profile"; .gpuInstanceProfile)
  + opt("--mode"; .mode) + opt("--kubernetes-version"; .orchestratorVersion)
  + opt("--gpu-driver"; .gpuProfile.driver)
  + (if $l != [] then ["--labels"] + $l else [] end)
  + opt("--node-taints"; $t | map(taint_text) | join(","))
  + (if $max != null or .enableAutoScaling then
       ["--enable-cluster-autoscaler", "--min-count", "\\($nodes)", "--max-count", "\\($max // $nodes)"]
     else [] end)
| @sh
"""


def _chain(*steps: str) -> str:
    """The steps as one command, each run only when the one before succeeded: a step that reads
    the live group and fails leaves nothing half done, and no shell variable is carried from one
    runbook command to the next (a stale one from an earlier wave could be read)."""
    return " && ".join(steps)


def _gke_where(name: str) -> str:
    return f'{name} --project="$PROJECT" --cluster="$CLUSTER" --location="$LOCATION"'


#: The kubectl context `gcloud container clusters get-credentials` writes for the cluster the GKE
#: commands name (`gke_<project>_<location>_<cluster>`): counts are read there, never from the
#: current context.
_GKE_CONTEXT = '--context="gke_${PROJECT}_${LOCATION}_${CLUSTER}"'


def _eks_where(name: str) -> str:
    return f'--cluster-name "$CLUSTER" --nodegroup-name {name}'


def _aks_where(name: str) -> str:
    return f'--resource-group "$RESOURCE_GROUP" --cluster-name "$CLUSTER" --name {name}'


def node_group_create(
    cloud: str,
    name: str,
    source: str,
    nodes: int,
    max_nodes: int | None,
    labels: Mapping[str, str],
    taints: Sequence[Mapping[str, str]],
) -> tuple[str, ...]:
    """The commands that create node group `name` of `cloud` as a copy of the live group `source`.

    The copy has the source's hardware and placement (GKE machine type, accelerator type and count,
    GPU driver choice and partition size, zones, disk, image, service account and scopes, Spot; EKS subnets, node role, instance
    types, AMI type, capacity type, launch template or disk size; AKS VM size, zones, OS disk and
    SKU, node and pod subnets, max pods, mode, Kubernetes version, GPU driver choice and instance
    profile), the source's node labels
    with `labels` set over them, and the source's taints with `taints` merged by key and effect.
    Its size: `nodes` nodes, the autoscaler's minimum `nodes` and maximum `max_nodes` (or `nodes`),
    on EKS always, on GKE and AKS when the source autoscales or `max_nodes` is given.

    GKE's `--num-nodes` counts nodes per zone: when `nodes` does not split evenly over the source's
    zones, the jq step fails before anything is created. GKE's GPU driver: the source's
    `gpu-driver-version` (`default`, `latest`), else `disabled` (the GPU Operator installs the
    driver; on current GKE an omitted option would install GKE's default driver).
    """
    if nodes < 1:
        raise ValueError(f"node group {name!r} needs at least one node, not {nodes}")
    if max_nodes is not None and max_nodes < nodes:
        raise ValueError(f"node group {name!r}: max_nodes {max_nodes} is below nodes {nodes}")
    new, old = _checked(cloud, name), _checked(cloud, source)
    args: dict[str, object] = {
        "source": source,
        "nodes": nodes,
        "max": max_nodes,
        "labels": dict(labels),
        "taints": _k8s_taints(taints),
    }
    wait: tuple[str, ...] = ()
    if cloud == "gke":
        read = f"gcloud container node-pools describe {_gke_where(old)} --format=json"
        program, create = _GKE_COPY, f"gcloud container node-pools create {_gke_where(new)}"
    elif cloud == "eks":
        read = f"aws eks describe-nodegroup {_eks_where(old)} --output json"
        program, create = _EKS_COPY, f"aws eks create-nodegroup {_eks_where(new)}"
        wait = (f"aws eks wait nodegroup-active {_eks_where(new)}",)
    else:
        read = f"az aks nodepool show {_aks_where(old)} -o json"
        program, create = _AKS_COPY, f"az aks nodepool add {_aks_where(new)}"
    return (_chain(*_read_then(read, program, args, "copy"), f'{create} "$@"'), *wait)


def node_group_delete(cloud: str, name: str) -> tuple[str, ...]:
    """The commands that delete node group `name` of `cloud` and wait until it is gone (GKE drains
    its nodes first)."""
    group = _checked(cloud, name)
    if cloud == "gke":
        return (f"gcloud container node-pools delete {_gke_where(group)} --quiet",)
    if cloud == "eks":
        return (
            f"aws eks delete-nodegroup {_eks_where(group)}",
            f"aws eks wait nodegroup-deleted {_eks_where(group)}",
        )
    return (f"az aks nodepool delete {_aks_where(group)}",)


_EKS_RESIZE = """
if .nodegroup.nodegroupName != $name or (.nodegroup.scalingConfig.desiredSize | type) != "number" then
  error("the describe output is not node group \\($name) with its size: nothing changed")
else . end
| .nodegroup.scalingConfig as $s | ($s.desiredSize + $delta) as $n
| if $n < 0 then error("the node group has \\($s.desiredSize) nodes, it cannot lose \\(-$delta)")
  else ["minSize=\\([$s.minSize, $n] | min),maxSize=\\([$s.maxSize + $delta, $n, 1] | max),desiredSize=\\($n)"] end
| @sh
"""

#: jq over the live pool, with its registered Nodes counted as `$now`: the new size per zone, then
#: the autoscaler's limits (total or per zone, as the pool has them; none when it does not autoscale).
_GKE_RESIZE = """
if type != "object" or .name != $name or (.locations | type) != "array" or (.locations | length) == 0 then
  error("the describe output is not node pool \\($name) with its zones: nothing changed")
else . end
| .autoscaling as $a | (.locations | length) as $z | ($now + $delta) as $n
| if $n < 0 then error("the node pool has \\($now) nodes, it cannot lose \\(-$delta)")
  elif $n % $z != 0 then
    error("\\($n) nodes do not split evenly over the node pool's \\($z) zones (gcloud --num-nodes is per zone)")
  else . end
| ["\\($n / $z)"]
  + if ($a.enabled | not) then []
    elif ($a.totalMaxNodeCount // 0) > 0 then
      ["--enable-autoscaling", "--total-min-nodes", "\\([$a.totalMinNodeCount // 0, $n] | min)",
       "--total-max-nodes", "\\([$a.totalMaxNodeCount + $delta, $n] | max)"]
    else
      ["--enable-autoscaling", "--min-nodes", "\\([$a.minNodeCount // 0, $n / $z] | min)",
       "--max-nodes", "\\([(($a.maxNodeCount // 0) * $z + $delta) / $z | ceil, $n / $z] | max)"]
    end
| @sh
"""

#: jq: how many Nodes a `kubectl get nodes -o json` list holds; an error for anything else.
_COUNT = 'if (.items | type) == "array" then .items | length else error("kubectl printed no node list") end'

_AKS_RESIZE = """
if type != "object" or .name != $name or (.count | type) != "number" then
  error("the show output is not node pool \\($name) with its size: nothing changed")
else . end
| (.count + $delta) as $n
| if $n < 0 then error("the node pool has \\(.count) nodes, it cannot lose \\(-$delta)")
  elif .enableAutoScaling then
    ["update", "--update-cluster-autoscaler", "--min-count", "\\([.minCount, $n] | min)",
     "--max-count", "\\([.maxCount + $delta, $n] | max)"]
  else ["scale", "--node-count", "\\($n)"] end
| @sh
"""


def node_group_resize(cloud: str, name: str, delta: int) -> tuple[str, ...]:
    """The commands that change the size of the live node group `name` of `cloud` by `delta` nodes
    (negative: fewer), and its autoscaler's maximum by the same, its minimum lowered where it would
    be above the new size (never raised: growing back leaves a lowered minimum as it is).

    Which node a shrinking group gives up is the cloud's choice (GKE: "Resize will pick instances to
    remove at random"): the runbook cordons and drains the nodes to go first. EKS sets the new
    `desiredSize` with its limits. GKE resizes every zone to the new size over the number of zones
    (the present size counted as the pool's registered Nodes; a new size that does not split evenly
    over the zones fails in jq) after setting the autoscaler's limits, total or per zone as the pool
    has them. AKS scales a pool without autoscaler; with it on, `az aks nodepool scale` is refused, so
    only the limits change and the autoscaler moves the pool within them (removing the emptied nodes,
    adding nodes for pending pods).
    """
    group, change = _checked(cloud, name), {"delta": delta}
    if cloud == "eks":
        read = f"aws eks describe-nodegroup {_eks_where(group)} --output json"
        return (
            _chain(
                *_read_then(read, _EKS_RESIZE, {"name": name, **change}, "scaling"),
                _eks_update(group, '--scaling-config "$1"'),
            ),
        )
    if cloud == "gke":
        nodes = f"kubectl {_GKE_CONTEXT} get nodes -l cloud.google.com/gke-nodepool={group} -o json"
        cluster = f'"$CLUSTER" --project="$PROJECT" --location="$LOCATION" --node-pool {group}'
        read = f"gcloud container node-pools describe {_gke_where(group)} --format=json"
        return (
            _chain(
                f"nodes=$({nodes})",
                f"now=$(printf '%s\\n' \"$nodes\" | jq -e {shlex.quote(_COUNT)})",
                '[ -n "$now" ]',
                *_read_then(read, _GKE_RESIZE, {"name": name, **change}, "resize", {"now": "now"}),
                "size=$1 && shift",
                f'if [ $# -gt 0 ]; then gcloud container clusters update {cluster} "$@"; fi',
                f'gcloud container clusters resize {cluster} --num-nodes "$size" --quiet',
            ),
        )
    read = f"az aks nodepool show {_aks_where(group)} -o json"
    return (
        _chain(
            *_read_then(read, _AKS_RESIZE, {"name": name, **change}, "change"),
            f'az aks nodepool "$@" {_aks_where(group)}',
        ),
    )
