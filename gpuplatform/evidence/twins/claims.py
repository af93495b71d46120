"""Twins of the programs that judge claims: rollback safety, claim placement, cleanup."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpuplatform.evidence.twins import reading as r

__all__ = ["claim_placement", "cleanup", "rollback_safety"]


def _claim_nodes(claim: Any, data: r.Object) -> list[str]:
    """`claim_nodes`: the nodes a claim's devices of the driver are allocated on, sorted."""
    results = r.results(claim, data)
    if not results:
        return []
    named: list[Any] = [result.get("pool") for result in results]
    terms = r.items(r.at(claim, "status", "allocation", "nodeSelector", "nodeSelectorTerms"))
    for term in terms:
        for field in r.items(r.field(term, "matchFields")):
            if r.field(field, "key") == "metadata.name":
                values = r.field(field, "values")
                if values is None:
                    raise r.Unlike("values")  # jq cannot iterate over null
                named += r.items(values)
    nodes: set[str] = set()
    for node in named:
        if type(node) is not str:
            raise r.Unlike(node)
        nodes.add(node)
    return sorted(nodes)


def rollback_safety(document: r.Object, data: r.Object, pools: list[dict[str, Any]]) -> r.Lines:
    """Twin of `gate_rollback_safety`."""
    need = r.need(document, ("nodes", "pods", "resourceclaims"))
    if need:
        return need
    dra = r.dra_names(pools)
    is_dra = set(dra)
    installed = data["driverInstalled"]
    why = "which this wave does not declare DRA" if installed else "and this wave has no DRA driver"

    def outside(node: str) -> bool:
        return not installed or node not in is_dra

    v = [
        f"violation: claim {r.nsname(c)} is allocated on node {node}, {why}"
        for c in r.items(document["resourceclaims"])
        for node in _claim_nodes(c, data)
        if outside(node)
    ]
    for pod in r.items(document["pods"]):
        if r.at(pod, "metadata", "deletionTimestamp") is None or not r.has_claims(pod):
            continue
        node = r.text(r.at(pod, "spec", "nodeName")) or ""
        if node != "" and outside(node):
            v.append(
                f"violation: pod {r.nsname(pod)} with a resource claim is still terminating on node {node}, {why}"
            )
    if v:
        return v
    if installed:
        return [
            "proof: no claim allocated and no claim-holding pod terminating outside the DRA nodes "
            f"({r.join(dra)})"
        ]
    return [f"proof: no {data['driver']} claim allocated anywhere and no claim-holding pod terminating"]


def claim_placement(document: r.Object, data: r.Object, pools: list[dict[str, Any]]) -> r.Lines:
    """Twin of `gate_claim_placement`."""
    need = r.need(document, ("nodes", "resourceclaims"))
    if need:
        return need
    is_dra = set(r.dra_names(pools))
    claims = [(c, nodes) for c in r.items(document["resourceclaims"]) if (nodes := _claim_nodes(c, data))]
    if not claims:
        return [f"proof: no claim holds a {data['driver']} device"]
    lines = []
    for claim, nodes in claims:
        where = r.join(
            "/".join(r.shown(r.text(result.get(key))) for key in ("driver", "pool", "device"))
            for result in r.results(claim, data)
        )
        for node in nodes:
            if node in is_dra:
                lines.append(f"proof: claim {r.nsname(claim)}: {where}")
            else:
                lines.append(
                    f"violation: claim {r.nsname(claim)} is allocated on {node}, not a DRA node of this wave ({where})"
                )
    return lines


def cleanup(document: r.Object, data: r.Object, pools: list[dict[str, Any]]) -> r.Lines:
    """Twin of `gate_cleanup`."""
    need = r.need(document, ("pods", "resourceclaims"))
    if need:
        return need
    pods: dict[str, Any] = {}
    for pod in r.items(document["pods"]):
        uid = r.text(r.at(pod, "metadata", "uid"))
        if uid is None:
            raise r.Unlike("metadata.uid")
        pods[uid] = pod
    claims = r.items(document["resourceclaims"])
    v = []
    for claim in claims:
        users = [u for u in r.items(r.at(claim, "status", "reservedFor")) if r.field(u, "resource") == "pods"]
        v += _stale(
            pods,
            claim,
            users,
            "claim {claim} is reserved for pod {pod}, which no longer exists",
            "claim {claim} is still reserved for pod {pod}, which has finished ({phase})",
        )
    allocated = [c for c in claims if r.at(c, "status", "allocation") is not None]
    for claim in allocated:
        owners = [
            o
            for o in r.items(r.at(claim, "metadata", "ownerReferences"))
            if r.field(o, "kind") == "Pod" and r.field(o, "controller") is True
        ]
        v += _stale(
            pods,
            claim,
            owners,
            "claim {claim} of pod {pod}, which no longer exists, is still allocated",
            "claim {claim} of finished pod {pod} is still allocated",
        )
    if v:
        return v
    return [f"proof: {len(allocated)} allocated claim(s), each reserved only for pods that exist and may run"]


def _stale(pods: Mapping[str, Any], claim: Any, references: list[Any], gone: str, finished: str) -> r.Lines:
    """A violation for each reference of `claim` (a reservation, an owner) to a pod that no longer
    exists (`gone`) or has finished (`finished`); the texts name {claim}, {pod} and its {phase}."""
    lines = []
    for reference in references:
        pod, name = _pod_of(pods, reference), r.shown(r.text(r.field(reference, "name")))
        if pod is None:
            lines.append("violation: " + gone.format(claim=r.nsname(claim), pod=name))
        elif not r.live(pod):
            phase = r.shown(r.text(r.at(pod, "status", "phase")))
            lines.append("violation: " + finished.format(claim=r.nsname(claim), pod=name, phase=phase))
    return lines


def _pod_of(pods: Mapping[str, Any], reference: Any) -> Any:
    uid = r.text(r.field(reference, "uid"))
    if uid is None:
        raise r.Unlike("uid")  # jq cannot look an object up by null
    return pods.get(uid)
