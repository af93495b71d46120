"""Where each legacy extended resource goes: `--tier`, `--map`, MIG profiles and sharing resources.

`--tier` names a tier of the spec (`--spec`) or a DeviceClass the spec or the DRA driver chart
renders; a name that is neither is refused (a claim for a class that does not exist stays Pending).
`nvidia.com/mig-<profile>` (the device plugin's mixed MIG strategy) goes to the spec's tier with that
`migProfile`, else to the chart's `mig.nvidia.com` with a profile selector. `nvidia.com/gpu.shared`
(time-slicing or MPS renamed by the device plugin) goes to the spec's one sharing tier, with a
warning; any other `nvidia.com/*` resource needs `--map RESOURCE=TIER`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from gpuplatform.errors import InputError
from gpuplatform.labels import GPU_RESOURCE, MIG_RESOURCE_PREFIX, SHARED_GPU_RESOURCE
from gpuplatform.model.platform import Platform
from gpuplatform.render.meta import Obj
from gpuplatform.render.selectors import cel_string
from gpuplatform.render.tenants import dra_pool_tolerations, tenant_labels, tenant_of
from gpuplatform.versions import CHART_DEVICE_CLASSES

__all__ = ["Placement", "Targets", "resolve_targets"]

_CHART_MIG_CLASS = "mig.nvidia.com"


@dataclass(frozen=True)
class Placement:
    """The DeviceClass (and selectors) a legacy resource becomes, and what the user must know."""

    device_class: str
    selectors: tuple[str, ...] = ()
    warning: str = ""


@dataclass(frozen=True)
class Targets:
    """How `convert` maps each extended resource, and what it adds to the converted pods."""

    gpu: Placement
    mapped: dict[str, Placement] = field(default_factory=dict)
    platform: Platform | None = None

    def place(self, resource: str) -> Placement | None:
        """The placement of `resource`; None when it cannot be converted without `--map`."""
        if resource in self.mapped:
            return self.mapped[resource]
        if resource == GPU_RESOURCE:
            return self.gpu
        if resource.startswith(MIG_RESOURCE_PREFIX):
            return _mig(self.platform, resource.removeprefix(MIG_RESOURCE_PREFIX))
        if resource == SHARED_GPU_RESOURCE:
            return _sharing(self.platform)
        return None

    def tolerations(self) -> list[Obj]:
        """The DRA pools' taints (empty without a spec)."""
        return dra_pool_tolerations(self.platform) if self.platform is not None else []

    def unowned(self, namespace: str | None) -> bool:
        """Whether a spec is given and no tenant of it owns `namespace` (or the manifest names none)."""
        return self.platform is not None and (
            namespace is None or tenant_of(self.platform, namespace) is None
        )

    def labels(self, namespace: str | None) -> dict[str, str]:
        """The labels of the tenant owning `namespace` (for the templates and their claims)."""
        if self.platform is None or namespace is None:
            return {}
        return tenant_labels(tenant_of(self.platform, namespace))


def _classes(platform: Platform | None) -> dict[str, str]:
    """Names `--tier` accepts -> the DeviceClass: spec tiers, rendered classes, the chart's classes."""
    names = {c: c for c in CHART_DEVICE_CLASSES}
    if platform is not None:
        for tier in platform.tiers:
            names[tier.name] = names[platform.class_name(tier.name)] = platform.class_name(tier.name)
        for bridge in platform.bridges:
            if bridge.source == "platform":
                names[platform.class_name(bridge.name)] = platform.class_name(bridge.name)
    return names


def _mig(platform: Platform | None, profile: str) -> Placement:
    tiers = [t for t in (platform.tiers if platform else ()) if t.mig_profile == profile]
    if platform is not None and len(tiers) == 1:
        return Placement(platform.class_name(tiers[0].name))
    selector = f"device.attributes[{cel_string('gpu.nvidia.com')}].profile == {cel_string(profile)}"
    return Placement(
        _CHART_MIG_CLASS,
        (selector,),
        f"MIG profile {profile} has no tier of its own: it goes to the chart's {_CHART_MIG_CLASS} with a "
        "raw profile selector, which tenant policies refuse unless `allow.selectors`; add a tier with "
        f"migProfile: {profile} (or --map nvidia.com/mig-{profile}=TIER)",
    )


def _sharing(platform: Platform | None) -> Placement | None:
    tiers = [t for t in (platform.tiers if platform else ()) if t.sharing != "exclusive"]
    if platform is None or len(tiers) != 1:
        return None
    tier = tiers[0]
    return Placement(
        platform.class_name(tier.name),
        warning=f"{SHARED_GPU_RESOURCE} (a time-sliced or MPS replica) goes to the sharing tier {tier.name} "
        f"({tier.sharing}): the pod shares a GPU with other claims, as it did",
    )


def resolve_targets(tier: str, platform: Platform | None, maps: Sequence[str]) -> Targets:
    """`--tier`, `--spec` and `--map` as Targets; InputError naming the option that is wrong."""
    classes = _classes(platform)

    def resolve(option: str, name: str) -> str:
        if name in classes:
            return classes[name]
        known = "the spec's tiers or classes, or the chart's classes" if platform else "the chart's classes"
        hint = "" if platform else "; pass --spec STACK to use the spec's tiers"
        raise InputError.single(
            option, "", f"{name!r} is none of {known} ({', '.join(sorted(classes))}){hint}"
        )

    mapped: dict[str, Placement] = {}
    for item in maps:
        resource, sep, target = item.partition("=")
        if not sep or not resource.startswith("nvidia.com/") or not target:
            raise InputError.single(
                "--map", "", f"{item!r} is not RESOURCE=TIER (e.g. nvidia.com/gpu.shared=ts)"
            )
        mapped[resource] = Placement(resolve("--map", target))
    return Targets(Placement(resolve("--tier", tier)), mapped, platform)
