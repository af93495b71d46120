"""A structured-parameters allocator that decides like Kubernetes' own.

A port of the *stable* variant of k8s.io/dynamic-resource-allocation
structured/internal/stable/allocator_stable.go (kubernetes-1.36.1): an exhaustive depth-first
search that takes claims in order, then their requests, then one device at a time, backtracking
on failure, and returns the first complete solution. Modelled: `exactly` requests with `count`
or `allocationMode: All`, `firstAvailable` subrequests (DRAPrioritizedList), class and request
CEL selectors, `constraints[].matchAttribute`, devices already allocated, admin access, device
taints and request tolerations, the 32-devices-per-claim limit with its backtracking shortcut,
class and claim config in the result, and the node selector of the result. Not modelled (see
docs/capacity.md): partitionable devices (shared counters: such slices are skipped, devices that
consume counters are never picked), consumable capacity and multi-allocatable devices, binding
conditions (devices with them are never picked, as in the stable variant), list-type attributes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpuplatform.capacity.claims import ALLOCATION_RESULTS_MAX_SIZE, Claim, DeviceClass, Request
from gpuplatform.capacity.constraints import MatchAttribute
from gpuplatform.capacity.pools import Pool, gather_pools
from gpuplatform.capacity.selectors import SelectorCache
from gpuplatform.cel import CelCompileError, CelEvaluationError
from gpuplatform.errors import GpuplatformError
from gpuplatform.kube.nodes import Node, taints_tolerated

__all__ = ["AllocationError", "Allocator", "DeviceID", "Features", "NodeAllocationError"]

DeviceID = tuple[str, str, str]
"""(driver, pool, device)."""
_Key = tuple[int, int, int]


class AllocationError(GpuplatformError):
    """The claims cannot be allocated anywhere: bad input (unknown class, CEL error, ...)."""


class NodeAllocationError(AllocationError):
    """Allocation failed on this node only (`ErrFailedAllocationOnNode`: invalid pools)."""


class _MaxSizeExceeded(Exception):
    """`errAllocationResultMaxSizeExceeded`: backtrack past the current request."""


@dataclass(frozen=True)
class Features:
    """The allocator features the cluster enables (`internal.Features`)."""

    admin_access: bool = True
    prioritized_list: bool = True
    device_taints: bool = True


@dataclass
class _Device:
    id: DeviceID
    raw: Mapping[str, Any]
    spec: Mapping[str, Any]
    index: int


@dataclass
class _Data:
    request: Request
    parent: str | None
    device_class: DeviceClass
    count: int = 0
    all_devices: list[_Device] | None = None
    selected: int = 0

    @property
    def full_name(self) -> str:
        return f"{self.parent}/{self.request.name}" if self.parent else self.request.name


@dataclass
class _Search:
    claims: Sequence[Claim]
    pools: list[Pool]
    devices: list[list[_Device]]
    allocated: frozenset[DeviceID]
    data: dict[_Key, _Data] = field(default_factory=dict)
    constraints: list[list[MatchAttribute]] = field(default_factory=list)
    allocating: dict[DeviceID, set[int]] = field(default_factory=dict)
    results: list[list[tuple[_Data, _Device]]] = field(default_factory=list)
    memo: dict[tuple[DeviceID, _Key], bool] = field(default_factory=dict)


def _device_text(device_id: DeviceID) -> str:
    return "/".join(device_id)


class Allocator:
    """Allocates claims for one node at a time against fixed classes, slices and allocated devices."""

    def __init__(
        self,
        classes: Iterable[DeviceClass],
        slices: Sequence[Mapping[str, Any]],
        *,
        allocated: Iterable[DeviceID] = (),
        features: Features = Features(),
        selectors: SelectorCache | None = None,
    ) -> None:
        self.classes = {c.name: c for c in classes}
        self.slices = list(slices)
        self.allocated = frozenset(allocated)
        self.features = features
        self.selectors = selectors or SelectorCache()
        self._by_node: dict[str, list[Mapping[str, Any]]] = {}
        self._shared: list[Mapping[str, Any]] = []
        for item in self.slices:
            node = item["spec"].get("nodeName")
            (self._by_node.setdefault(node, []) if node else self._shared).append(item)

    def pools(self, node: Node) -> list[Pool]:
        """The pools `node` can allocate from (GatherPools)."""
        candidates = self._by_node.get(node.name, []) + self._shared
        pools = gather_pools(candidates, node)
        if any(p.incomplete for p in pools):
            pools = [p for p in gather_pools(self.slices, node) if p.id in {q.id for q in pools}]
        return pools

    def allocate(
        self, node: Node, claims: Sequence[Claim], allocated: Iterable[DeviceID] = ()
    ) -> list[dict[str, Any]] | None:
        """One AllocationResult per claim, or None when the claims do not fit on `node`.

        `allocated` adds devices in use to those the allocator was built with. AllocationError for
        input the scheduler would refuse everywhere; NodeAllocationError when the node has an
        invalid pool and nothing could be allocated.
        """
        search = self._search(node, claims, allocated)
        if search is None:
            return None
        return [self._result(search, c, claim) for c, claim in enumerate(claims)]

    def devices(
        self, node: Node, claims: Sequence[Claim], allocated: Iterable[DeviceID] = ()
    ) -> frozenset[DeviceID] | None:
        """The devices `allocate` would give the claims (all of them together), or None."""
        search = self._search(node, claims, allocated)
        if search is None:
            return None
        for c in range(len(claims)):
            _node_selector([device for _, device in search.results[c]])
        return frozenset(device.id for found in search.results for _, device in found)

    def _search(self, node: Node, claims: Sequence[Claim], allocated: Iterable[DeviceID]) -> _Search | None:
        pools = self.pools(node)
        devices = [
            [
                _Device((p.driver, p.name, str(d.get("name"))), d, s["spec"], i)
                for s in p.slices
                for i, d in enumerate(s["spec"].get("devices") or ())
            ]
            for p in pools
        ]
        search = _Search(claims, pools, devices, self.allocated.union(allocated))
        for c, claim in enumerate(claims):
            self._prepare_claim(search, c, claim)
        if not self._one(search, (0, 0, 0), 0, False):
            if any(p.invalid for p in pools):
                raise NodeAllocationError("invalid resource pools were encountered")
            return None
        return search

    # --- preparation (validateDeviceRequest) ----------------------------------------------------

    def _prepare_claim(self, search: _Search, c: int, claim: Claim) -> None:
        minimum = 0
        for q, entry in enumerate(claim.requests):
            if entry.first_available:
                if not self.features.prioritized_list:
                    raise AllocationError(
                        f"claim {claim.key}, request {entry.name}: has subrequests, "
                        "but the DRAPrioritizedList feature is disabled"
                    )
                counts = []
                for s, sub in enumerate(entry.first_available):
                    data = self._validate(search, (c, q, s), claim, sub, entry.name)
                    search.data[(c, q, s)] = data
                    counts.append(data.count)
                minimum += min(counts)
            else:
                request = entry.exactly or Request(entry.name, "")
                data = self._validate(search, (c, q, 0), claim, request, None)
                search.data[(c, q, 0)] = data
                minimum += data.count
        if minimum > ALLOCATION_RESULTS_MAX_SIZE:
            raise AllocationError(
                f"claim {claim.key}: number of requested devices {minimum} exceeds the claim limit "
                f"of {ALLOCATION_RESULTS_MAX_SIZE}"
            )
        search.results.append([])
        constraints = []
        for i, constraint in enumerate(claim.constraints):
            if constraint.match_attribute is None:
                raise AllocationError(
                    f"claim {claim.key}, constraint #{i}: empty constraint (unsupported constraint type?)"
                )
            constraints.append(MatchAttribute(constraint.match_attribute, constraint.requests))
        search.constraints.append(constraints)

    def _validate(
        self, search: _Search, key: _Key, claim: Claim, request: Request, parent: str | None
    ) -> _Data:
        where = f"claim {claim.key}, request {request.name}"
        for i, selector in enumerate(request.selectors):
            if selector is None:
                raise AllocationError(
                    f"{where}, selector #{i}: CEL expression empty (unsupported selector type?)"
                )
        if not self.features.admin_access and request.admin_access is not None:
            raise AllocationError(f"{where}: admin access is requested, but the feature is disabled")
        if not request.class_name:
            raise AllocationError(f"{where}: missing device class name (unsupported request type?)")
        device_class = self.classes.get(request.class_name)
        if device_class is None:
            raise AllocationError(f"{where}: could not retrieve device class {request.class_name}: not found")
        data = _Data(request, parent, device_class)
        if request.mode == "ExactCount":
            data.count = request.count
        elif request.mode == "All":
            data.all_devices = []
            for pool, devices in zip(search.pools, search.devices, strict=True):
                if pool.incomplete:
                    raise AllocationError(
                        f"{where}: asks for all devices, but resource pool {pool.id} is currently being updated"
                    )
                if pool.invalid:
                    raise AllocationError(
                        f"{where}: asks for all devices, but resource pool {pool.id} is currently invalid"
                    )
                data.all_devices += [d for d in devices if self._selectable(search, key, data, d)]
            data.count = len(data.all_devices)
        else:
            raise AllocationError(f"{where}: unsupported count mode {request.mode}")
        return data

    # --- matching (isSelectable, selectorsMatch) ----------------------------------------------

    def _selectable(self, search: _Search, key: _Key, data: _Data, device: _Device) -> bool:
        if device.raw.get("bindingConditions"):
            return False
        memo_key = (device.id, key)
        found = search.memo.get(memo_key)
        if found is None:
            found = self._matches(search, key[0], data.device_class.name, data.device_class.selectors, device)
            found = found and self._matches(search, key[0], None, data.request.selectors, device)
            search.memo[memo_key] = found
        return found

    def _matches(
        self,
        search: _Search,
        c: int,
        class_name: str | None,
        selectors: Sequence[str | None],
        device: _Device,
    ) -> bool:
        owner = f"class {class_name}" if class_name is not None else f"claim {search.claims[c].key}"
        for i, expression in enumerate(selectors):
            assert expression is not None
            try:
                verdict = self.selectors.verdicts(expression, device.spec)[device.index]
            except CelCompileError as exc:
                raise AllocationError(f"{owner}: selector #{i}: CEL compile error: {exc}") from None
            if isinstance(verdict, CelEvaluationError):
                detail = str(verdict).split("CEL runtime error: ", 1)[-1]
                raise AllocationError(f"{owner}: selector #{i}: CEL runtime error: {detail}")
            if not verdict:
                return False
        return True

    # --- the search (allocateOne, allocateDevice) --------------------------------------------

    def _in_use(self, search: _Search, device_id: DeviceID) -> bool:
        return device_id in search.allocated or bool(search.allocating.get(device_id))

    def _one(self, search: _Search, key: _Key, d: int, sub_mode: bool) -> bool:
        c, q, _ = key
        if c >= len(search.claims):
            return True
        claim = search.claims[c]
        if q >= len(claim.requests):
            try:
                return self._one(search, (c + 1, 0, 0), 0, False)
            except _MaxSizeExceeded:
                return False
        data = search.data[key]
        if not sub_mode and data.parent is not None:
            return self._first_available(search, key, d)
        request = data.request
        if request.mode == "All" and not data.all_devices:
            return False
        if d >= data.count:
            return self._one(search, (c, q + 1, 0), 0, False)
        if len(search.results[c]) + data.count - d > ALLOCATION_RESULTS_MAX_SIZE:
            raise _MaxSizeExceeded
        if data.all_devices is not None:
            device = data.all_devices[d]
            undo = self._allocate_device(search, key, device, must=True)
            if undo is None:
                return False
            return self._continue(search, key, d, sub_mode, undo)
        for pool, devices in zip(search.pools, search.devices, strict=True):
            if pool.incomplete or pool.invalid:
                continue
            for device in devices:
                if request.wants_admin:
                    if c in search.allocating.get(device.id, ()):
                        continue
                elif self._in_use(search, device.id):
                    continue
                if not self._selectable(search, key, data, device):
                    continue
                undo = self._allocate_device(search, key, device, must=False)
                if undo is None:
                    continue
                if self._continue(search, key, d, sub_mode, undo):
                    return True
        return False

    def _continue(self, search: _Search, key: _Key, d: int, sub_mode: bool, undo: Callable[[], None]) -> bool:
        try:
            done = self._one(search, key, d + 1, sub_mode)
        except BaseException:
            undo()
            raise
        if not done:
            undo()
        return done

    def _first_available(self, search: _Search, key: _Key, d: int) -> bool:
        c, q, _ = key
        all_exceeded = True
        s = 0
        while (c, q, s) in search.data:
            try:
                done = self._one(search, (c, q, s), d, True)
            except _MaxSizeExceeded:
                s += 1
                continue
            all_exceeded = False
            if done:
                search.data[(c, q, 0)].selected = s
                return True
            s += 1
        if all_exceeded:
            raise _MaxSizeExceeded
        return False

    def _allocate_device(
        self, search: _Search, key: _Key, device: _Device, *, must: bool
    ) -> Callable[[], None] | None:
        c = key[0]
        data = search.data[key]
        request = data.request
        if request.wants_admin:
            if c in search.allocating.get(device.id, ()):
                return None
        elif self._in_use(search, device.id):
            return None
        if device.raw.get("consumesCounters"):
            return None
        base, sub = (data.parent, request.name) if data.parent else (request.name, "")
        if self.features.device_taints and not taints_tolerated(
            device.raw.get("taints") or (), request.tolerations
        ):
            return None
        constraints = search.constraints[c]
        for i, constraint in enumerate(constraints):
            if not constraint.add(base, sub, device.raw, device.id[0]):
                if must:
                    raise AllocationError(
                        f"claim {search.claims[c].key}, request {request.name}: cannot add device "
                        f"{_device_text(device.id)} because a claim constraint would not be satisfied"
                    )
                for earlier in constraints[:i]:
                    earlier.remove(base, sub)
                return None
        search.allocating.setdefault(device.id, set()).add(c)
        search.results[c].append((data, device))
        size = len(search.results[c]) - 1

        def undo() -> None:
            for constraint in constraints:
                constraint.remove(base, sub)
            search.allocating[device.id].discard(c)
            del search.results[c][size:]

        return undo

    # --- the result ----------------------------------------------------------------------------

    def _result(self, search: _Search, c: int, claim: Claim) -> dict[str, Any]:
        results = []
        for data, device in search.results[c]:
            entry: dict[str, Any] = {
                "request": data.full_name,
                "driver": device.id[0],
                "pool": device.id[1],
                "device": device.id[2],
            }
            if data.request.wants_admin:
                entry["adminAccess"] = True
            if data.request.tolerations:
                entry["tolerations"] = [dict(t) for t in data.request.tolerations]
            results.append(entry)
        config = self._config(search, c, claim)
        out: dict[str, Any] = {"devices": {"results": results}}
        if config:
            out["devices"]["config"] = config
        selector = _node_selector([device for _, device in search.results[c]])
        if selector is not None:
            out["nodeSelector"] = selector
        return out

    def _config(self, search: _Search, c: int, claim: Claim) -> list[dict[str, Any]]:
        config: list[dict[str, Any]] = []
        ranges: dict[str, tuple[int, int]] = {}
        chosen: dict[int, _Data] = {}
        for q in range(len(claim.requests)):
            data = search.data[(c, q, 0)]
            if data.parent is not None:
                data = search.data[(c, q, data.selected)]
            chosen[q] = data
            name = data.device_class.name
            if name in ranges:
                start, end = ranges[name]
                for entry in config[start:end]:
                    entry["requests"].append(data.full_name)
                continue
            start = len(config)
            for setting in data.device_class.config:
                body = {k: v for k, v in setting.items() if k != "requests"}
                config.append({"source": "FromClass", "requests": [data.full_name], **body})
            ranges[name] = (start, len(config))
        for item in claim.config:
            wanted = list(item.get("requests") or ())
            body = {k: v for k, v in item.items() if k != "requests"}
            if not wanted:
                config.append({"source": "FromClaim", **body})
                continue
            for q, claim_request in enumerate(claim.requests):
                data = chosen[q]
                if claim_request.name in wanted or (data.parent is not None and data.full_name in wanted):
                    config.append({"source": "FromClaim", "requests": wanted, **body})
        return config


def _node_selector(devices: Sequence[_Device]) -> dict[str, Any] | None:
    """`createNodeSelector`: pinned to the node of the first node-local device, else merged selectors."""
    fields: list[Mapping[str, Any]] = []
    expressions: list[Mapping[str, Any]] = []
    for device in devices:
        spec = device.spec
        if spec.get("nodeName"):
            requirement = {"key": "metadata.name", "operator": "In", "values": [spec["nodeName"]]}
            return {"nodeSelectorTerms": [{"matchFields": [requirement]}]}
        terms = (spec.get("nodeSelector") or {}).get("nodeSelectorTerms") or []
        if len(terms) > 1:
            raise AllocationError(f"unsupported ResourceSlice.NodeSelector with {len(terms)} terms")
        if terms:
            for target, source in ((fields, "matchFields"), (expressions, "matchExpressions")):
                for requirement in terms[0].get(source) or ():
                    if not any(_same_requirement(requirement, r) for r in target):
                        target.append(requirement)
    if not fields and not expressions:
        return None
    term: dict[str, Any] = {}
    if expressions:
        term["matchExpressions"] = [dict(r) for r in expressions]
    if fields:
        term["matchFields"] = [dict(r) for r in fields]
    return {"nodeSelectorTerms": [term]}


def _same_requirement(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return (
        a.get("key") == b.get("key")
        and a.get("operator") == b.get("operator")
        and set(a.get("values") or ()) == set(b.get("values") or ())
    )
