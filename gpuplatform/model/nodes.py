"""Node pools: which nodes, which GPUs, and the wave in which they move to DRA."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from gpuplatform.model.base import DnsLabel, DnsSubdomain, LabelKey, SpecModel

__all__ = ["NodePool", "Provisioner", "Taint"]


class Taint(SpecModel):
    """A node taint; owned by the node provisioner, so it is handed off, never patched by GitOps."""

    key: LabelKey
    """Taint key (`gpu-scheduling.<domain>/mode`)."""
    value: str = ""
    """Taint value (`dra`)."""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = "NoSchedule"
    """Taint effect."""


class Provisioner(SpecModel):
    """The controller that owns a pool's nodes (their labels and taints go to `handoff/`)."""

    kind: Literal["karpenter", "cluster-api", "node-group"]
    """Karpenter NodePool, Cluster API MachineDeployment, or a cloud node group (EKS, GKE, AKS)."""
    name: DnsSubdomain
    """Name of the Karpenter NodePool, MachineDeployment or cloud node group."""


class NodePool(SpecModel):
    """A set of GPU nodes that migrate together.

    Static pools list `nodes` and get SSA partial Node objects in `10-nodes/`; provisioner-managed
    pools get a hand-off for the provisioner's owner instead.
    """

    name: DnsLabel
    """Pool name (a label of the spec, never a node name)."""
    nodes: tuple[DnsSubdomain, ...] = ()
    """Node names of a static pool (each gets an SSA partial Node); empty for a provisioner pool."""
    provisioner: Provisioner | None = None
    """The controller that owns the pool's nodes, instead of listing them."""
    product: str = Field(min_length=1)
    """GPU product, a catalog key (`H100-80GB`) or the driver's productName (`NVIDIA H100 80GB HBM3`)."""
    gpus_per_node: int = Field(default=8, ge=1, le=128)
    """GPUs on each node of the pool."""
    migrates_in: DnsLabel | None = None
    """Wave in which the pool moves to DRA; absent = legacy until the final-cutover wave."""
    taint: Taint | None = None
    """Taint of the DRA pool; default `<modeLabel>=dra:NoSchedule`."""
    operator_validator: bool | None = None
    """Force `nvidia.com/gpu.deploy.operator-validator`; default follows the GPU Operator release."""
    mig_layout: tuple[str, ...] = ()
    """MIG profiles per GPU (e.g. `["3g.40gb", "3g.40gb"]`) when the pool is MIG-partitioned."""

    @model_validator(mode="after")
    def _nodes_xor_provisioner(self) -> NodePool:
        if bool(self.nodes) == (self.provisioner is not None):
            raise ValueError("a pool lists its nodes or names its provisioner, exactly one of the two")
        if len(set(self.nodes)) != len(self.nodes):
            raise ValueError("a node is listed twice in the same pool")
        return self
