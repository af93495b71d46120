"""Node pools: which nodes, which GPUs, and the wave in which they move to DRA."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from gpuplatform.model.base import (
    MAX_CLUSTER_NODES,
    CleanString,
    DnsLabel,
    DnsSubdomain,
    LabelKey,
    LabelValue,
    Quantity,
    SpecModel,
)
from gpuplatform.model.clouds import node_group_name_problem
from gpuplatform.model.fields import Items, OptionalRef, default
from gpuplatform.model.waves import Wave

__all__ = ["LabelRequirement", "NodePool", "NodeSelector", "Provisioner", "Taint"]


class Taint(SpecModel):
    """A node taint; owned by the node provisioner, so it is handed off, never patched by GitOps."""

    key: LabelKey
    """Taint key (`gpu-scheduling.<domain>/mode`)."""
    value: LabelValue = ""
    """Taint value (`dra`)."""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = "NoSchedule"
    """Taint effect (`NoExecute` is refused: see `_no_execute`)."""

    @model_validator(mode="after")
    def _no_execute(self) -> Taint:
        """A DRA pool's taint goes on before the runbook drains the pool's GPU pods, so a NoExecute one
        would have the taint-eviction controller evict every pod that does not tolerate it at once,
        CPU pods and PodDisruptionBudgets alike (kubernetes pkg/controller/tainteviction
        `taint_eviction.go`: pods are deleted when a NoExecute taint they do not tolerate appears)."""
        if self.effect == "NoExecute":
            raise ValueError(
                "effect NoExecute: the taint goes on before the runbook's GPU-only drain, and the taint-eviction "
                "controller would evict every pod that does not tolerate it at once, past PodDisruptionBudgets; "
                "use NoSchedule (the default): the drain step then empties the nodes of GPU pods only"
            )
        return self


class Provisioner(SpecModel):
    """The controller that owns a pool's nodes (their labels and taints go to `handoff/`).

    Gates find the pool's nodes by label: Karpenter's `karpenter.sh/nodepool=<name>`, the cloud's
    node-group label (`cloud`), or `nodeLabels` when given (which then replace the default).
    Capacity counts `minNodes` nodes and lets the provisioner add nodes up to `maxNodes` / `limits`.
    """

    kind: Literal["karpenter", "cluster-api", "node-group"]
    """Karpenter NodePool, Cluster API MachineDeployment, or a cloud node group (EKS, GKE, AKS)."""
    name: DnsSubdomain
    """Name of the Karpenter NodePool, MachineDeployment or cloud node group."""
    cloud: Literal["eks", "gke", "aks"] | None = None
    """Cloud of a `node-group` pool: selects nodes by `eks.amazonaws.com/nodegroup`,
    `cloud.google.com/gke-nodepool` or `kubernetes.azure.com/agentpool` equal to `name`."""
    node_labels: dict[LabelKey, LabelValue] = {}
    """Labels every node of the pool carries, used instead of the provisioner's own label (needed for
    cluster-api, which syncs only `node.cluster.x-k8s.io/*` labels from a Machine to its Node)."""
    min_nodes: int = Field(default=1, strict=True, ge=0, le=MAX_CLUSTER_NODES)
    """Nodes the pool has whenever its gates run; fewer found is `unknown`, never held. 0 accepts an
    empty pool (a pool that scales to zero proves nothing while it is empty)."""
    max_nodes: int | None = Field(default=None, strict=True, ge=0, le=MAX_CLUSTER_NODES)
    """Most nodes the pool can have: the node group's max size, the cluster-api autoscaler's
    `max-size` annotation, or Karpenter's `limits.nodes`. Absent (and no `limits`): capacity
    cannot bound the pool and says its verdict depends on the provisioner."""
    limits: dict[LabelKey, int | Quantity] = {}
    """Karpenter only: the NodePool's `spec.limits` as written there (`nodes`, `nvidia.com/gpu`,
    `cpu`, ...); `nodes` and the pool's GPU resources bound the pool, others depend on instance types."""
    scales_for_claims: bool | None = None
    """Whether the provisioner adds nodes for pods with ResourceClaims. Default: Karpenter no (it
    ignores DRA pods unless IGNORE_DRA_REQUESTS=false), Cluster Autoscaler (node-group,
    cluster-api) yes (DRA handling is locked on since cluster-autoscaler 1.35)."""

    @model_validator(mode="after")
    def _selector_rules(self) -> Provisioner:
        if self.cloud is not None and self.kind != "node-group":
            raise ValueError(f"cloud is for node-group pools, not {self.kind}")
        if any(not value for value in self.node_labels.values()):
            raise ValueError("nodeLabels values must not be empty")
        if self.limits and self.kind != "karpenter":
            raise ValueError(f"limits are a Karpenter NodePool's; a {self.kind} pool declares maxNodes")
        negative = sorted(k for k, v in self.limits.items() if str(v).lstrip().startswith("-"))
        if negative:
            raise ValueError(f"limits must not be negative: {', '.join(negative)}")
        if self.max_nodes is not None and self.max_nodes < self.min_nodes:
            raise ValueError(f"maxNodes {self.max_nodes} is below minNodes {self.min_nodes}")
        return self


class LabelRequirement(SpecModel):
    """One `matchExpressions` item of a Kubernetes label selector (apimachinery `LabelSelectorRequirement`)."""

    key: LabelKey
    """Node label key (`nvidia.com/mig.config`)."""
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    """`In`/`NotIn` need `values`; `Exists`/`DoesNotExist` take none (`NotIn` also matches an absent label)."""
    values: Items[LabelValue] = default(())
    """Label values for `In` and `NotIn`."""

    @model_validator(mode="after")
    def _values_fit_operator(self) -> LabelRequirement:
        if (self.operator in ("In", "NotIn")) != bool(self.values):
            need = "needs values" if self.operator in ("In", "NotIn") else "takes no values"
            raise ValueError(f"operator {self.operator} {need}")
        return self


class NodeSelector(SpecModel):
    """Which nodes of the cluster (or of the provisioner's node group) form the pool: a Kubernetes
    label selector; every `matchLabels` pair and every `matchExpressions` item must hold."""

    match_labels: dict[LabelKey, LabelValue] = {}
    """Labels every node of the pool carries (`nvidia.com/mig.config: all-1g.10gb`)."""
    match_expressions: Items[LabelRequirement] = default(())
    """Set-based requirements (`{key: nvidia.com/mig.config, operator: NotIn, values: [all-1g.10gb]}`)."""

    @model_validator(mode="after")
    def _selects_something(self) -> NodeSelector:
        if not self.match_labels and not self.match_expressions:
            raise ValueError("a selector needs matchLabels or matchExpressions")
        return self


class NodePool(SpecModel):
    """A set of GPU nodes that migrate together.

    Static pools list `nodes` and get SSA partial Node objects in `10-nodes/`; provisioner-managed
    pools get a hand-off for the provisioner's owner instead.
    """

    name: DnsLabel
    """Pool name (a label of the spec, never a node name)."""
    nodes: Items[DnsSubdomain] = default(())
    """Node names of a static pool (each gets an SSA partial Node); empty for a provisioner pool."""
    provisioner: Provisioner | None = None
    """The controller that owns the pool's nodes, instead of listing them."""
    product: CleanString
    """GPU product, a catalog key (`H100-80GB`) or the driver's productName (`NVIDIA H100 80GB HBM3`)."""
    gpus_per_node: int = Field(default=8, strict=True, ge=1, le=128)
    """GPUs on each node of the pool."""
    instance_type: LabelValue | None = None
    """The cloud instance type of the pool's nodes (`node.kubernetes.io/instance-type`, which the cloud
    provider sets): a workload's `nodeSelector` on it places pods on this pool in `capacity` and
    `simulate`; `init` reads it from the nodes."""
    migrates_in: OptionalRef[Wave] = default(None)
    """Wave in which the pool moves to DRA; absent = legacy until the final-cutover wave."""
    taint: Taint | None = None
    """Taint of the DRA pool; default `<modeLabel>=dra:NoSchedule`."""
    operator_validator: bool | None = None
    """Force `nvidia.com/gpu.deploy.operator-validator`; default follows the GPU Operator release."""
    mig_layout: Items[CleanString] = default(())
    """MIG profiles per GPU (e.g. `["3g.40gb", "3g.40gb"]`) when the pool is MIG-partitioned."""
    mig_config: LabelValue | None = None
    """The MIG manager's config (`nvidia.com/mig.config`) that partitions the pool's GPUs as
    `migLayout`. Default when every GPU is cut into one profile: `all-<profile>`, the name the GPU
    Operator's default mig-parted config gives it (`all-1g.10gb`); a mixed layout names its own.
    A provisioner pool's nodes get it from their template (the hand-off), so a node the group
    creates comes up partitioned."""

    @property
    def mig_config_name(self) -> str | None:
        """The `nvidia.com/mig.config` value of the pool's nodes; None for whole GPUs."""
        if not self.mig_layout:
            return None
        return self.mig_config or f"all-{self.mig_layout[0]}"

    selector: NodeSelector | None = None
    """Label selector narrowing the provisioner's nodes to this pool's (with `provisioner`); several
    pools may then share one provisioner, each selecting its own nodes."""
    takes_over_from: OptionalRef[NodePool] = default(None)
    """A legacy node-group pool this one takes nodes from: the pool is a *new* cloud node group
    created in its `migratesIn` wave next to the old one, born on DRA with the
    hand-off's labels and taint, with `minNodes` nodes; the old group gives up as many (its size,
    `maxNodes` lowered by them). Before that wave the pool does not
    exist; rolling back deletes it and gives the old group its nodes back."""

    @model_validator(mode="after")
    def _nodes_xor_provisioner(self) -> NodePool:
        if self.selector is not None and self.provisioner is None:
            raise ValueError("a selector narrows a provisioner's nodes: name the provisioner too")
        if bool(self.nodes) == (self.provisioner is not None):
            raise ValueError("a pool lists its nodes or names its provisioner, exactly one of the two")
        if len(set(self.nodes)) != len(self.nodes):
            raise ValueError("a node is listed twice in the same pool")
        if self.mig_config is not None and not self.mig_layout:
            raise ValueError("migConfig names the config of a migLayout: give the layout it applies")
        if self.mig_config is None and len(set(self.mig_layout)) > 1:
            raise ValueError(
                "a migLayout of several profiles needs migConfig: the name of the mig-parted config "
                "that applies it (the GPU Operator's default config names only all-<profile> layouts)"
            )
        if self.takes_over_from is not None:
            self._takeover_rules()
        if (
            self.selector is not None
            and self.provisioner is not None
            and self.provisioner.kind == "karpenter"
        ):
            raise ValueError(
                "a Karpenter NodePool's nodes share one template (labels, taints): give each pool its own NodePool"
            )
        return self

    def _takeover_rules(self) -> None:
        """What a pool created next to another needs of itself (the pair is checked in `references`)."""
        owner = self.provisioner
        if owner is None or owner.cloud is None:
            raise ValueError(
                "takesOverFrom creates a new cloud node group: give a provisioner of kind node-group with its "
                "cloud (the runbook creates it with the cloud's own command). A Karpenter NodePool moves node by "
                "node already (each drifted node is replaced within its disruption budgets), and a new one "
                "would stay empty: Karpenter adds nodes only for pending pods, and ignores pods with claims "
                "unless IGNORE_DRA_REQUESTS=false"
            )
        if problem := node_group_name_problem(owner.cloud, owner.name):
            raise ValueError(f"the runbook creates this group: {problem}")
        if self.selector is not None:
            raise ValueError("a pool that takes over nodes is a whole new node group: it has no selector")
        if self.migrates_in is None:
            raise ValueError("takesOverFrom needs migratesIn: the wave in which the new group is created")
        if owner.min_nodes < 1:
            raise ValueError(
                "takesOverFrom moves minNodes nodes to the new group: minNodes must be 1 or more"
            )
