"""The facts a wave's gates judge by, as JSON: the same data feeds the Jobs and the offline evaluator.

Everything the spec knows about a wave that a gate needs — each pool's selector and mode, the
devices each DRA pool must publish, the operands, the validation workloads' names — is computed
here once, shipped in each gate Job's facts ConfigMap (read as `$data`), and given to the same jq
program offline. Whether the DRA driver's controller runs is the chart's fact for the values the
release renders (`charts/`), not a reading of the team's values.
"""

from __future__ import annotations

from typing import Any

from gpuplatform.errors import InputError
from gpuplatform.gates.matchers import DEVICE_PLUGIN_LABEL, DRA_DRIVER, OPERANDS
from gpuplatform.gates.nodes import pool_selector
from gpuplatform.inventory.catalog import lookup_product, mig_profiles
from gpuplatform.inventory.memory import memory_range
from gpuplatform.kueue.render import kueue_facts
from gpuplatform.model.nodes import NodePool
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.helm_values import dra_driver_chart, dra_driver_values, running_operator
from gpuplatform.versions import CHART_DEVICE_CLASSES, DCGM_EXPORTER_DRA_ENV

__all__ = ["device_classes", "pool_inventory", "wave_data"]


def pool_inventory(pool: NodePool) -> dict[str, Any]:
    """What every node of a DRA pool must publish: device type and count, product name, memory."""
    try:
        product = lookup_product(pool.product)
    except InputError:
        product = None
    expected: dict[str, Any] = {
        "type": "mig" if pool.mig_layout else "gpu",
        "count": pool.gpus_per_node * (len(pool.mig_layout) or 1),
        "productName": product.product_name if product else None,
        "memory": None,
        "profiles": {},
    }
    if product is None:
        return expected
    if not pool.mig_layout:
        expected["memory"] = memory_range(product.memory, product.variance).as_data()
        return expected
    table = {p.name: p for p in mig_profiles(product.key)}
    expected["profiles"] = {
        name: memory_range(table[name].memory, table[name].variance).as_data()
        for name in sorted(set(pool.mig_layout))
        if name in table
    }
    return expected


def _pools(plan: Plan, state: WaveState) -> list[dict[str, Any]]:
    return [
        pool_selector(plan.pool_in(state, pool.name)).as_data() | {"mode": state.pool_modes[pool.name]}
        for pool in plan.platform.node_pools
        if state.present(pool.name)
    ]


def wave_data(plan: Plan, state: WaveState, workloads: dict[str, Any]) -> dict[str, Any]:
    """Every fact of the wave a gate may read; `workloads` names the wave's validation Jobs."""
    p = plan.platform
    return {
        "driver": DRA_DRIVER,
        "driverInstalled": state.driver_installed,
        "driverNamespace": p.dra_driver.namespace,
        "driverController": dra_driver_chart(p).renders("apps", "Deployment", dra_driver_values(plan)),
        "operatorNamespace": p.gpu_operator.namespace,
        "modeLabel": p.mode_label_key,
        "devicePluginLabel": list(DEVICE_PLUGIN_LABEL),
        "devicePluginEnabled": state.device_plugin_enabled,
        "bridgeAllowed": state.bridge_allowed,
        "pools": _pools(plan, state),
        "drains": list(state.drains),
        "inventory": {
            pool.name: pool_inventory(pool)
            for pool in plan.platform.node_pools
            if pool.name in state.dra_pools
        },
        "deviceClasses": device_classes(plan, state),
        "operands": operands(plan),
        "kueue": kueue_facts(plan, state),
        **workloads,
    }


def operands(plan: Plan) -> list[dict[str, Any]]:
    """The operands the GPU Operator deploys; the DCGM exporter with the env that puts it in DRA
    mode (`draEnv`) where the operator's values set it (`charts/model.py` `exporter_dra`): an
    exporter pod on a DRA node without it loses the pods of DRA-allocated GPUs."""
    running = running_operator(plan.platform)
    out = []
    for operand in (o for o in OPERANDS if o.name in running.operands):
        data = operand.as_data()
        if operand.name == "dcgm-exporter" and running.exporter_dra:
            data["draEnv"] = DCGM_EXPORTER_DRA_ENV
        out.append(data)
    return out


def device_classes(plan: Plan, state: WaveState) -> list[str]:
    """The DeviceClasses the wave needs: its tiers, its platform bridges, the chart class it bridges with."""
    p = plan.platform
    bridges = [b for b in p.bridges if b.name in state.bridges]
    classes = [p.class_name(t) for t in state.tiers]
    classes += [p.class_name(b.name) for b in bridges if b.source == "platform"]
    if any(b.source == "chart" for b in bridges):
        classes += [c for c, resource in CHART_DEVICE_CLASSES.items() if resource]
    return classes
