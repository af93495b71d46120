"""What the user declares: frozen pydantic models, no I/O and no rendering."""

from gpuplatform.kueue.model import ClusterQueue, Kueue
from gpuplatform.model.classes import BridgeClass, ServiceTier, Sharing
from gpuplatform.model.nodes import NodePool, Provisioner, Taint
from gpuplatform.model.platform import (
    Acceptances,
    Delivery,
    DraDriver,
    GpuOperator,
    Kubernetes,
    Monitoring,
    Platform,
)
from gpuplatform.model.tenants import (
    ClaimTemplate,
    Tenant,
    TenantAllowances,
    TenantGitOps,
    TenantPolicy,
    TenantQuota,
)
from gpuplatform.model.waves import STAGES, Stage, Wave
from gpuplatform.model.workloads import (
    AttributeSelector,
    CapacitySelector,
    NimService,
    SelectorOp,
    Toleration,
    ValidationWorkload,
    Workload,
)

__all__ = [
    "STAGES",
    "Acceptances",
    "AttributeSelector",
    "BridgeClass",
    "CapacitySelector",
    "ClaimTemplate",
    "ClusterQueue",
    "Delivery",
    "DraDriver",
    "GpuOperator",
    "Kubernetes",
    "Kueue",
    "Monitoring",
    "NimService",
    "NodePool",
    "Platform",
    "Provisioner",
    "SelectorOp",
    "ServiceTier",
    "Sharing",
    "Stage",
    "Taint",
    "Tenant",
    "TenantAllowances",
    "TenantGitOps",
    "TenantPolicy",
    "TenantQuota",
    "Toleration",
    "ValidationWorkload",
    "Wave",
    "Workload",
]
