"""Gates that can judge: images pinned, every pool findable, no pool that can prove nothing."""

from __future__ import annotations

from collections.abc import Iterator

from gpuplatform.gates.nodes import pool_selector
from gpuplatform.inventory.catalog import default_mig_config
from gpuplatform.labels import MIG_CONFIG_LABEL
from gpuplatform.policy.registry import Finding, RuleContext, rule
from gpuplatform.simulate.mig_layouts import DISABLED

__all__: list[str] = []


@rule(
    "GP230",
    "warning",
    "a gate or validation image is not pinned by digest",
    """
The gate Jobs and the validation pods are the wave's evidence. A tag can be moved to other
content between the review and the run; a digest cannot. Pin `delivery.kubectlImage` and
`validation.image` with `@sha256:…` or their `…Digest` field (e.g. `crane digest <image>`).
""",
)
def image_not_pinned(ctx: RuleContext) -> Iterator[Finding]:
    d = ctx.platform.delivery
    if "@" not in d.kubectl_image and d.kubectl_image_digest is None:
        yield Finding(
            "spec.delivery.kubectlImage",
            f"the gate image {d.kubectl_image!r} is a tag, not a digest",
            "set delivery.kubectlImageDigest: sha256:<64 hex> (or kubectlImage: <image>@sha256:<64 hex>)",
        )
    v = ctx.platform.validation
    if v is not None and "@" not in v.image and v.image_digest is None:
        yield Finding(
            "spec.validation.image",
            f"the validation image {v.image!r} is a tag, not a digest",
            "set validation.imageDigest: sha256:<64 hex> (or image: <image>@sha256:<64 hex>)",
        )


@rule(
    "GP231",
    "error",
    "the gates cannot find a pool's nodes",
    """
Gates and `evidence` find a provisioner pool's nodes by label: Karpenter's `karpenter.sh/nodepool`,
a cloud node group's own label (`provisioner.cloud`: eks, gke, aks), or `provisioner.nodeLabels`.
A node group without a cloud, or a cluster-api pool without `nodeLabels` (Cluster API copies only
`node.cluster.x-k8s.io/*` labels from a Machine to its Node), gives the gates nothing to select:
its nodes would go unchecked.
""",
)
def pool_not_findable(ctx: RuleContext) -> Iterator[Finding]:
    for i, pool in enumerate(ctx.platform.node_pools):
        if not pool_selector(pool).resolvable:
            yield Finding(
                f"spec.nodePools[{i}].provisioner",
                f"pool {pool.name!r} ({pool.provisioner.kind if pool.provisioner else 'static'}) names no label "
                "the gates can find its nodes by",
                "set provisioner.cloud (node-group) or provisioner.nodeLabels (labels every node of the pool carries)",
            )


@rule(
    "GP232",
    "warning",
    "a DRA pool may be empty while its gates run",
    """
With `provisioner.minNodes: 0` a pool may have no node when its wave's gates run; the gates then
hold without having seen one of its GPUs. Keep at least one node in the pool while it migrates
(Karpenter: a static NodePool `replicas`, or a placeholder pod) and leave `minNodes` at 1 or more.
""",
)
def empty_dra_pool(ctx: RuleContext) -> Iterator[Finding]:
    dra = {name for state in ctx.plan.waves for name in state.dra_pools}
    for i, pool in enumerate(ctx.platform.node_pools):
        if pool.provisioner is not None and pool.provisioner.min_nodes == 0 and pool.name in dra:
            yield Finding(
                f"spec.nodePools[{i}].provisioner.minNodes",
                f"pool {pool.name!r} becomes DRA but its gates accept finding no node",
                "set minNodes to the nodes the pool keeps while it migrates",
            )


@rule(
    "GP234",
    "error",
    "a pool's migLayout is not what the MIG config it names applies",
    """
Without `migConfig` a pool cut into one profile names the GPU Operator's default mig-parted config
`all-<profile>`, which fills each GPU with as many instances of the profile as its 7 compute and 8
memory slices hold (`all-1g.10gb`: 7 on an A100-80GB; `inventory.catalog.default_mig_config`). A
`migLayout` with fewer (or more) instances is not what the MIG manager applies: the nodes publish
other devices than declared and the `inventory` gate never holds. Declare the layout the config
applies, or name the team's own config in `migConfig`.
""",
)
def mig_layout_not_applied(ctx: RuleContext) -> Iterator[Finding]:
    for i, pool in enumerate(ctx.platform.node_pools):
        name = pool.mig_config_name
        if name is None or pool.mig_config is not None:
            continue
        applied = default_mig_config(pool.product, name)
        if applied is not None and applied != pool.mig_layout:
            yield Finding(
                f"spec.nodePools[{i}].migLayout",
                f"pool {pool.name!r} declares {len(pool.mig_layout)} x {pool.mig_layout[0]} per GPU, but {name} "
                f"(the GPU Operator's default config) applies {len(applied)}",
                f"declare migLayout as {len(applied)} x {applied[0]}, or name your own config in migConfig",
            )


@rule(
    "GP235",
    "error",
    "a node's live MIG config is not the layout its pool declares (check --snapshot)",
    """
The spec's `migLayout` (and `migConfig`) say which devices a pool's nodes have, and gates, capacity
and `simulate` count those; nothing in the rendered tree sets `nvidia.com/mig.config`, so the live
label is what the MIG manager applies. A node whose live `nvidia.com/mig.config` names another
config (or a whole-GPU pool's node carrying one other than `all-disabled`) publishes other devices
than declared: the `inventory` gate never holds and every verdict counts the wrong devices. Declare
the layout the nodes run (`gpuplatform init` reads it), or relabel the nodes first: on a node that
is already on DRA, as the runbook's node maintenance says (drain its claims, relabel, then restart
its DRA kubelet plugin, which publishes only the devices it found when it started).
""",
)
def live_mig_config_differs(ctx: RuleContext) -> Iterator[Finding]:
    if ctx.snapshot is None:
        return
    nodes = ctx.snapshot.items("nodes") or []
    labels = {str(n["metadata"]["name"]): (n["metadata"].get("labels") or {}) for n in nodes}
    active = ctx.plan.active
    for i, pool in enumerate(ctx.platform.node_pools):
        if not active.present(pool.name):
            continue
        wanted = pool.mig_config_name
        for node in pool_selector(ctx.plan.pool_in(active, pool.name)).found(nodes):
            live = str(labels[node].get(MIG_CONFIG_LABEL, ""))
            if live == (wanted or "") or (wanted is None and live == DISABLED):
                continue
            declared = (
                f"{wanted} ({len(pool.mig_layout)} x {pool.mig_layout[0]} per GPU)"
                if wanted
                else "whole GPUs"
            )
            yield Finding(
                f"spec.nodePools[{i}].migLayout",
                f"node {node} of pool {pool.name!r} runs {MIG_CONFIG_LABEL}={live or '(none)'}, but the pool "
                f"declares {declared}",
                "declare the layout the nodes run (migLayout, migConfig), or relabel the nodes before this wave"
                + (
                    " (on DRA: the runbook's MIG change, which restarts the DRA kubelet plugin)"
                    if active.pool_modes[pool.name] == "dra"
                    else ""
                ),
            )
