"""A pool's nodes as the model first sees them: registered by the kubelet, labelled by their group's
template and, on a MIG pool, partitioned by the MIG manager already. The starting cluster and every
group the runbook creates later (`takesOverFrom`) are made here."""

from __future__ import annotations

from gpuplatform.gates.nodes import pool_selector
from gpuplatform.inventory.catalog import lookup_product
from gpuplatform.kube.nodes import well_known_labels
from gpuplatform.labels import (
    GPU_COUNT_LABEL,
    GPU_PRESENT_LABEL,
    GPU_PRODUCT_LABEL,
    MIG_CAPABLE_LABEL,
    MIG_CONFIG_LABEL,
    MIG_CONFIG_STATE_LABEL,
    NFD_NVIDIA_PCI_LABEL,
)
from gpuplatform.model.nodes import NodePool
from gpuplatform.simulate.model import Group

__all__ = ["gfd_labels", "mig_capable", "pool_group", "provisioned_name"]


def mig_capable(product: str) -> bool:
    """gpu-operator `hasMIGCapableGPU`: the product name mentions H100, A100 or A30."""
    return any(p in product.lower() for p in ("h100", "a100", "a30"))


def provisioned_name(pool: str, index: int) -> str:
    """The name of the `index`-th node a provisioner launches for pool `pool` (the model's and the
    rehearsal's fleets name them alike)."""
    return f"{pool}-node-{index}"


def pool_group(pool: NodePool, gid: str, nodes: list[str], *, registered: bool = False) -> Group:
    """Nodes `nodes` of `pool` as one group `gid`: the kubelet's well-known labels, the labels that
    make them the pool's (its group's template, or set by the admin), NFD's, and on a MIG pool the
    layout its admin labelled and the MIG manager applied. `registered`: nodes that have just
    registered, which carry only the kubelet's and the template's labels (NFD has not labelled them)."""
    config = pool.mig_config_name
    mig = {MIG_CONFIG_LABEL: config, MIG_CONFIG_STATE_LABEL: "success"} if config and not registered else {}
    nfd = {} if registered else {NFD_NVIDIA_PCI_LABEL: "true"}
    member = pool_selector(pool).member_labels()
    kubelet = well_known_labels(nodes[0], pool.instance_type)
    return Group(
        gid,
        pool.name,
        pool.provisioner.kind if pool.provisioner else "static",
        nodes,
        pool.gpus_per_node,
        mig_capable(pool.product),
        labels={**kubelet, **member, **nfd, **mig},
        owners={
            **dict.fromkeys(kubelet, "kubelet"),
            **dict.fromkeys(member, "provisioner"),
            **dict.fromkeys(nfd, "nfd"),
            **dict.fromkeys(mig, "kubectl"),
        },
        mig_layout=pool.mig_layout,
        nfd_labelled=not registered,
    )


def gfd_labels(pool: NodePool, group: Group) -> dict[str, str]:
    """GPU Feature Discovery's product, count and `nvidia.com/mig.capable` once the GPU Operator has
    labelled the group's nodes (`nvidia.com/gpu.present`); none before (gpu-operator v26.3.1
    `controllers/state_manager.go` reads the same keys). The scheduler and the written Node read them."""
    if GPU_PRESENT_LABEL not in group.labels:
        return {}
    return {
        GPU_PRODUCT_LABEL: lookup_product(pool.product).product_name.replace(" ", "-"),
        GPU_COUNT_LABEL: str(group.gpus),
        MIG_CAPABLE_LABEL: str(group.mig_capable).lower(),
    }
