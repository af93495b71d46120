"""Names the platform derives from the spec, and the rule that no two things render as one.

Every DeviceClass, claim template, namespace, hand-off and handed-off file gets its name from
spec fields; two spec items that would render to the same object (kind, namespace, name) or the
same file would overwrite each other silently. Each such pair is refused here, naming both fields.
The DRA driver chart's own DeviceClass names are reserved (read off
shared/reference/charts/*/templates/deviceclass-*.yaml, `versions.CHART_DEVICE_CLASSES`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from gpuplatform.errors import format_loc
from gpuplatform.model.base import is_dns_subdomain, label_key_problem
from gpuplatform.model.references import Loc
from gpuplatform.versions import CHART_DEVICE_CLASSES

if TYPE_CHECKING:
    from gpuplatform.model.platform import Platform

__all__ = ["KUBERNETES_NAMESPACES", "identity_errors", "list_duplicates"]

#: Namespaces Kubernetes itself owns; a tenant there would take over their Namespace object.
KUBERNETES_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease")


def _claimed(owners: dict[str, Loc], key: str, loc: Loc, what: str) -> list[tuple[Loc, str]]:
    """Record that `loc` renders `key`; an error naming the first owner when it is taken."""
    first = owners.setdefault(key, loc)
    if first == loc:
        return []
    return [(loc, f"{what} is also rendered from {format_loc(first)}")]


def list_duplicates(loc: Loc, items: Iterable[str], what: str) -> list[tuple[Loc, str]]:
    """Each repeated entry of a list, at its index, naming the first."""
    seen: dict[str, int] = {}
    errors: list[tuple[Loc, str]] = []
    for i, item in enumerate(items):
        if item in seen:
            errors.append(
                ((*loc, i), f"{what} {item!r} is already listed at {format_loc((*loc, seen[item]))}")
            )
        else:
            seen.setdefault(item, i)
    return errors


#: Longest file name (one path segment) common file systems accept (`output.synth.NAME_MAX_BYTES`).
FILE_NAME_MAX_BYTES = 255


def _class_file(name: str) -> str:
    """The file a DeviceClass renders to (`render.meta.file_name`: `<kind>_<name>.yaml`)."""
    return f"deviceclass_{name}.yaml"


def _device_classes(p: Platform) -> list[tuple[Loc, str]]:
    errors: list[tuple[Loc, str]] = []
    owners: dict[str, Loc] = {}
    named = [(("spec", "tiers", i, "name"), t.name) for i, t in enumerate(p.tiers)]
    named += [
        (("spec", "bridges", i, "name"), b.name) for i, b in enumerate(p.bridges) if b.source == "platform"
    ]
    for loc, name in named:
        cls = p.class_name(name)
        if not is_dns_subdomain(cls):
            errors.append((loc, f"DeviceClass name {cls!r} is not a DNS subdomain of at most 253 characters"))
        elif len(_class_file(cls).encode()) > FILE_NAME_MAX_BYTES:
            errors.append(
                (
                    loc,
                    f"DeviceClass name {cls!r} renders the file {_class_file(cls)!r} of "
                    f"{len(_class_file(cls).encode())} bytes, over the {FILE_NAME_MAX_BYTES} file systems "
                    f"accept: keep the name within {FILE_NAME_MAX_BYTES - len(_class_file('').encode())} bytes",
                )
            )
        elif cls in CHART_DEVICE_CLASSES:
            errors.append(
                (loc, f"DeviceClass {cls!r} is the DRA driver chart's own class; choose another name")
            )
        errors += _claimed(owners, cls, loc, f"DeviceClass {cls!r}")
    return errors


def _namespaces(p: Platform) -> list[tuple[Loc, str]]:
    errors: list[tuple[Loc, str]] = []
    owners: dict[str, Loc] = {
        p.dra_driver.namespace: ("spec", "draDriver", "namespace"),
    }
    errors += _claimed(
        owners, p.delivery.gates_namespace, ("spec", "delivery", "gatesNamespace"), "Namespace"
    )
    reserved = {
        p.gpu_operator.namespace: "spec.gpuOperator.namespace",
        p.delivery.argocd_namespace: "spec.delivery.argocdNamespace",
        p.delivery.flux_namespace: "spec.delivery.fluxNamespace",
        **{ns: "Kubernetes" for ns in KUBERNETES_NAMESPACES},
    }
    for i, tenant in enumerate(p.tenants):
        loc: Loc = ("spec", "tenants", i, "namespace" if tenant.namespace else "name")
        if tenant.ns in reserved:
            errors.append((loc, f"namespace {tenant.ns!r} belongs to {reserved[tenant.ns]}, not to a tenant"))
        errors += _claimed(owners, tenant.ns, loc, f"Namespace {tenant.ns!r}")
    return errors


def _claim_objects(p: Platform) -> list[tuple[Loc, str]]:
    """ResourceClaimTemplates and ResourceClaims per namespace: tenants', workloads', NIM services'."""
    errors: list[tuple[Loc, str]] = []
    owners: dict[str, Loc] = {}
    tenant_ns = {t.name: t.ns for t in p.tenants}
    for i, tenant in enumerate(p.tenants):
        for j, tmpl in enumerate(tenant.claim_templates):
            key = f"ResourceClaimTemplate {tenant_ns[tenant.name]}/{tmpl.name}"
            errors += _claimed(owners, key, ("spec", "tenants", i, "claimTemplates", j, "name"), key)
    for i, w in enumerate(p.workloads):
        name = f"{w.name}-gpu"
        loc: Loc = ("spec", "workloads", i, "name")
        if not is_dns_subdomain(name):
            errors.append((loc, f"its claim template name {name!r} is over 253 characters"))
        key = f"ResourceClaimTemplate {w.namespace}/{name}"
        errors += _claimed(owners, key, loc, key)
    for i, nim in enumerate(p.nim_services):
        if nim.mode == "claimCreationSpec":
            continue
        name = f"{nim.name}-gpu"
        loc = ("spec", "nimServices", i, "name")
        if not is_dns_subdomain(name):
            errors.append((loc, f"its claim name {name!r} is over 253 characters"))
        kind = "ResourceClaimTemplate" if nim.mode == "template" else "ResourceClaim"
        key = f"{kind} {nim.namespace}/{name}"
        errors += _claimed(owners, key, loc, key)
    return errors


def _handoffs(p: Platform) -> list[tuple[Loc, str]]:
    """Hand-off objects and handed-off files: provisioners, workloads, manifests."""
    errors: list[tuple[Loc, str]] = []
    owners: dict[str, Loc] = {}
    for i, pool in enumerate(p.node_pools):
        if pool.provisioner is not None and pool.selector is None:
            key = f"{pool.provisioner.kind} {pool.provisioner.name!r}"
            errors += _claimed(owners, key, ("spec", "nodePools", i, "provisioner", "name"), key)
    for i, w in enumerate(p.workloads):
        key = f"workload {w.kind} {w.namespace}/{w.name}"
        errors += _claimed(owners, key, ("spec", "workloads", i, "name"), key)
        handoff = f"{w.kind.lower()}-{w.name}"
        if not is_dns_subdomain(handoff):
            errors.append(
                (("spec", "workloads", i, "name"), f"its hand-off name {handoff!r} is over 253 characters")
            )
    files: dict[str, Loc] = {}
    named = [("workloads", i, w.manifest) for i, w in enumerate(p.workloads)]
    named += [("nimServices", i, n.manifest) for i, n in enumerate(p.nim_services)]
    for field, i, manifest in named:
        if manifest is not None:
            base = PurePosixPath(manifest).name
            errors += _claimed(files, base, ("spec", field, i, "manifest"), f"hand-off file {base!r}")
    return errors


def _lists(p: Platform) -> list[tuple[Loc, str]]:
    errors: list[tuple[Loc, str]] = []
    for i, wave in enumerate(p.waves):
        errors += list_duplicates(("spec", "waves", i, "tiers"), wave.tiers, "tier")
        errors += list_duplicates(("spec", "waves", i, "bridges"), wave.bridges, "bridge")
        errors += list_duplicates(("spec", "waves", i, "tenants"), wave.tenants, "tenant")
    for i, tenant in enumerate(p.tenants):
        errors += list_duplicates(("spec", "tenants", i, "tiers"), tenant.tiers, "tier")
        errors += list_duplicates(("spec", "tenants", i, "groups"), tenant.groups, "group")
    errors += list_duplicates(("spec", "accept", "alphaFeatures"), p.accept.alpha_features, "feature")
    errors += list_duplicates(("spec", "delivery", "engines"), p.delivery.engines, "engine")
    return errors


def identity_errors(p: Platform) -> list[tuple[Loc, str]]:
    """Every derived name Kubernetes would refuse and every pair of spec items rendering as one."""
    errors: list[tuple[Loc, str]] = []
    if p.mode_label is None:
        problem = label_key_problem(p.mode_label_key)
        if problem is not None:
            errors.append(
                (("spec", "domain"), f"the node mode label {p.mode_label_key!r} is no label key: {problem}")
            )
    errors += _device_classes(p)
    errors += _namespaces(p)
    errors += _claim_objects(p)
    errors += _handoffs(p)
    errors += _lists(p)
    return errors
