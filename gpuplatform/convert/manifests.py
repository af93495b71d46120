"""Legacy manifests (`nvidia.com/*` device-plugin resources) -> ResourceClaimTemplates + pod claims.

Files round-trip through ruamel.yaml (comments, key order and document order kept): the one
exception to the single-dumper rule, because these files belong to the teams. What changes is only
what the move to DRA needs, with the device plugin's meaning kept:

- every GPU container keeps its own distinct devices: one pod claim `gpu` from the template
  `<workload>-gpu`, one request per container, each container naming its request (a claim never
  gives one device to two requests); `share=True` makes containers share a request, and says so;
- an init container reuses an app container's request of the same size, as the kubelet's device
  manager reuses init containers' devices for the app containers; a sidecar (`restartPolicy:
  Always`) runs beside them and keeps its own;
- the pod keeps the toleration the ExtendedResourceToleration admission plugin added for each
  extended resource it requested (kubernetes/kubernetes
  `plugin/pkg/admission/extendedresourcetoleration/admission.go`: key = resource name, `Exists`,
  `NoSchedule`), which it loses with the request, and gains the DRA pools' taint tolerations.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError

from gpuplatform.convert.aliases import unshare
from gpuplatform.convert.targets import Placement, Targets
from gpuplatform.errors import InputError, Problem
from gpuplatform.kueue.model import QUEUE_LABEL
from gpuplatform.labels import NVIDIA_RESOURCE_PREFIX, SHARED_GPU_RESOURCE
from gpuplatform.load.yaml_input import parse_yaml_documents
from gpuplatform.model.base import INT64_MAX, is_dns_label, is_dns_subdomain
from gpuplatform.render.meta import Obj
from gpuplatform.render.tenants import RECREATE_ANNOTATIONS
from gpuplatform.render.workload_handoff import template_name
from gpuplatform.validate import SchemaMissing, validate_object

__all__ = [
    "POD_SPEC_PATHS",
    "Conversion",
    "add_tolerations",
    "convert_text",
    "template_key",
    "template_name",
]

#: kind -> path from the document to its pod spec.
POD_SPEC_PATHS: dict[str, tuple[str, ...]] = {
    "Pod": ("spec",),
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}
_CLAIM = "gpu"


@dataclass
class Conversion:
    """The converted file text, the ResourceClaimTemplates it needs, and what changed in meaning."""

    text: str
    templates: list[Obj] = field(default_factory=list)
    converted: list[str] = field(default_factory=list)
    notes: list[Problem] = field(default_factory=list)


@dataclass
class _Need:
    """One extended resource of one container."""

    container: CommentedMap
    loc: str
    resource: str
    count: int
    placement: Placement
    init: bool
    request: str = ""

    @property
    def key(self) -> tuple[str, tuple[str, ...], int]:
        return (self.placement.device_class, self.placement.selectors, self.count)


def _yaml() -> YAML:
    y = YAML(typ="rt")
    y.preserve_quotes = True
    y.width = 4096
    return y


def _count(value: Any, resource: str, source: str, loc: str) -> int:
    text = str(value)
    if not text.isascii() or not text.isdigit() or int(text) < 1:
        raise InputError.single(source, loc, f"{resource} must be a whole number of devices, got {value!r}")
    if int(text) > INT64_MAX:
        raise InputError.single(
            source, loc, f"{resource} asks for {text} devices; a claim's count is at most {INT64_MAX} (int64)"
        )
    return int(text)


def _refusal(resource: str) -> str:
    if resource == SHARED_GPU_RESOURCE:
        return (
            f"{resource} is a time-sliced or MPS replica: give --spec a spec with exactly one sharing tier, "
            f"or --map {resource}=TIER"
        )
    return f"{resource} is a renamed or unknown device-plugin resource: convert it with --map {resource}=TIER"


def _needs(pod: dict[str, Any], targets: Targets, source: str, pod_loc: str) -> list[_Need]:
    needs = []
    for field_name in ("initContainers", "containers"):
        for i, container in enumerate(pod.get(field_name) or []):
            loc = f"{pod_loc}.{field_name}[{i}].resources"
            resources = container.get("resources") or {}
            parts = [p for p in ("limits", "requests") if isinstance(resources.get(p), dict)]
            names = sorted(
                {str(n) for p in parts for n in resources[p] if str(n).startswith(NVIDIA_RESOURCE_PREFIX)}
            )
            for name in names:
                counts = {
                    _count(resources[p][name], name, source, f"{loc}.{p}.{name}")
                    for p in parts
                    if name in resources[p]
                }
                if len(counts) > 1:
                    raise InputError.single(source, loc, f"{name} limits and requests differ")
                placement = targets.place(name)
                if placement is None:
                    raise InputError.single(source, f"{loc}.{parts[0]}.{name}", _refusal(name))
                sidecar = field_name == "initContainers" and container.get("restartPolicy") == "Always"
                init = field_name == "initContainers" and not sidecar
                needs.append(_Need(container, loc, name, counts.pop(), placement, init))
    return needs


def _label(base: str, taken: set[str]) -> str:
    """A DNS label from `base`, unique among `taken`."""
    name, n = base[:63], 1
    while name in taken:
        suffix = f"-{n}"
        name, n = base[: 63 - len(suffix)] + suffix, n + 1
    taken.add(name)
    return name


def _assign_requests(needs: list[_Need], share: bool) -> list[Obj]:
    """Give every need a request name; returns the template's requests."""
    requests: dict[str, _Need] = {}
    if share:
        groups: dict[tuple[str, tuple[str, ...]], list[_Need]] = {}
        for need in needs:
            groups.setdefault(need.key[:2], []).append(need)
        for k, members in enumerate(groups.values()):
            name = _CLAIM if len(groups) == 1 else f"{_CLAIM}-{k}"
            biggest = max(members, key=lambda n: n.count)
            requests[name] = biggest
            for need in members:
                need.request = name
    else:
        taken: set[str] = set()
        own = sorted((n for n in needs if not n.init), key=lambda n: ".initContainers[" in n.loc)
        single = len(own) == 1 and all(n.key == own[0].key for n in needs)
        for need in own:
            need.request = _label(_CLAIM if single else str(need.container["name"]), taken)
            requests[need.request] = need
        for need in (n for n in needs if n.init):
            reuse = next((r for r, n in requests.items() if n.key == need.key), None)
            need.request = reuse or _label(str(need.container["name"]) if requests else _CLAIM, taken)
            requests.setdefault(need.request, need)
    out = []
    for name, need in requests.items():
        exactly: Obj = {"deviceClassName": need.placement.device_class, "count": need.count}
        if need.placement.selectors:
            exactly["selectors"] = [{"cel": {"expression": s}} for s in need.placement.selectors]
        out.append({"name": name, "exactly": exactly})
    return out


def _strip(need: _Need) -> None:
    resources = need.container["resources"]
    for part in ("limits", "requests"):
        if isinstance(resources.get(part), dict) and need.resource in resources[part]:
            del resources[part][need.resource]
            if not resources[part]:
                del resources[part]


def _tolerated(tolerations: list[Any], key: str) -> bool:
    return any(
        isinstance(t, dict)
        and t.get("operator") == "Exists"
        and t.get("key") in (None, "", key)
        and t.get("effect") in (None, "", "NoSchedule")
        for t in tolerations
    )


def add_tolerations(pod: dict[str, Any], resources: list[str], pools: list[Obj]) -> list[str]:
    """Keep the ExtendedResourceToleration tolerations of `resources` and add the DRA pools' (`pools`) to
    `pod` (a pod spec, or a spec with pod-level `tolerations`); says what was added."""
    tolerations = pod.get("tolerations")
    if not isinstance(tolerations, list):
        tolerations = CommentedSeq()
    kept = [r for r in resources if not _tolerated(tolerations, r)]
    for resource in kept:
        tolerations.append(
            CommentedMap([("key", resource), ("operator", "Exists"), ("effect", "NoSchedule")])
        )
    added = [t for t in pools if not any(isinstance(x, dict) and dict(x) == t for x in tolerations)]
    for toleration in added:
        tolerations.append(CommentedMap(toleration.items()))
    if tolerations:
        pod["tolerations"] = tolerations
    said = []
    if kept:
        said.append(
            f"kept {', '.join(kept)} (Exists), which ExtendedResourceToleration added for the removed requests"
        )
    if added:
        said.append(
            "added the DRA pools' "
            + ", ".join(f"{t['key']}={t.get('value', '')}:{t['effect']}" for t in added)
        )
    return said


def _template(name: str, namespace: str | None, requests: list[Obj], labels: dict[str, str]) -> Obj:
    meta: Obj = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    if labels:
        meta["labels"] = dict(labels)
    meta["annotations"] = dict(RECREATE_ANNOTATIONS)
    inner: Obj = {"metadata": {"labels": dict(sorted(labels.items()))}} if labels else {}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": meta,
        "spec": {**inner, "spec": {"devices": {"requests": requests}}},
    }


def _notes(source: str, what: str, needs: list[_Need], requests: list[Obj], share: bool) -> list[Problem]:
    notes = [Problem(source, n.loc, "", n.placement.warning, "warning") for n in needs if n.placement.warning]
    by_request: dict[str, list[_Need]] = {}
    for need in needs:
        by_request.setdefault(need.request, []).append(need)
    sizes = {r["name"]: r["exactly"]["count"] for r in requests}
    for request, members in by_request.items():
        names = sorted({str(n.container["name"]) for n in members})
        if share and len(names) > 1:
            notes.append(
                Problem(
                    source,
                    members[0].loc,
                    "",
                    f"{what}: containers {', '.join(names)} share request {request!r} ({sizes[request]} device(s)): "
                    "they see the same devices (--share); the device plugin gave each its own",
                    "warning",
                )
            )
    before = max(
        max((n.count for n in needs if n.init), default=0), sum(n.count for n in needs if not n.init)
    )
    after = sum(sizes.values())
    alone = [n for n in needs if n.init and not any(m.request == n.request and not m.init for m in needs)]
    if not share and after != before:
        notes += [
            Problem(
                source,
                need.loc,
                "",
                f"{what}: init container {need.container['name']} matches no app container's request, so it "
                f"gets its own and the pod holds {after} device(s) instead of {before} (the device plugin "
                "reused init containers' devices for the app containers)",
                "warning",
            )
            for need in alone
        ]
    return notes


#: kind -> path from the document to the metadata Kueue reads the queue label from: the Job's own, a
#: CronJob's `jobTemplate` (its Jobs are created with those labels).
_QUEUE_METADATA: dict[str, tuple[str, ...]] = {
    "Job": ("metadata",),
    "CronJob": ("spec", "jobTemplate", "metadata"),
}


def _queue_label(doc: dict[str, Any]) -> tuple[str, str | None]:
    """(where, LocalQueue) of a Job's or CronJob's `kueue.x-k8s.io/queue-name` (None: not queued)."""
    path = _QUEUE_METADATA.get(str(doc.get("kind")))
    if path is None:
        return "", None
    node: Any = doc
    for part in path:
        node = node.get(part) if isinstance(node, dict) else None
    labels = node.get("labels") if isinstance(node, dict) else None
    value = labels.get(QUEUE_LABEL) if isinstance(labels, dict) else None
    return ".".join((*path, "labels", QUEUE_LABEL)), None if value is None else str(value)


def _queue_note(doc: CommentedMap, source: str, loc: str, targets: Targets) -> Problem | None:
    """What the spec's workload entry needs for Kueue to keep admitting the converted Job: the label
    is kept as it is, and the entry's `queue` must name the same LocalQueue."""
    where, queue = _queue_label(doc)
    meta = doc.get("metadata") or {}
    kind, name, namespace = str(doc["kind"]), str(meta.get("name", "")), meta.get("namespace")
    entry = next(
        (
            w
            for w in (targets.platform.workloads if targets.platform is not None else ())
            if (w.kind, w.name, w.namespace) == (kind, name, namespace)
        ),
        None,
    )
    if entry is not None and entry.queue != queue:
        said = f"queue: {queue}" if queue is not None else "no queue (the Job carries no queue label)"
        return Problem(
            source,
            f"{loc}.{where}" if queue is not None else loc,
            "",
            f"{kind}/{name}: the spec declares this workload with queue {entry.queue or '<none>'}; set {said} "
            "in its workload entry, or plan, capacity and simulate judge Kueue admission of another queue",
            "warning",
        )
    if queue is None:
        return None
    return Problem(
        source,
        f"{loc}.{where}",
        "",
        f"{kind}/{name}: submitted to LocalQueue {queue} ({QUEUE_LABEL} kept): its workload entry "
        f"needs queue: {queue}",
        "info",
    )


def _convert_workload(doc: CommentedMap, source: str, loc: str, targets: Targets, share: bool) -> Conversion:
    node: Any = doc
    path = POD_SPEC_PATHS[doc["kind"]]
    for part in path:
        node = node.get(part) if isinstance(node, dict) else None
    pod_loc = f"{loc}.{'.'.join(path)}"
    if not isinstance(node, dict):
        raise InputError.single(source, pod_loc, "no pod spec")
    needs = _needs(node, targets, source, pod_loc)
    meta = doc.get("metadata") or {}
    name, namespace = str(meta.get("name", "")), meta.get("namespace")
    what = f"{doc['kind']}/{name}"
    if not needs:
        return Conversion("")
    if node.get("resourceClaims"):
        raise InputError.single(
            source, f"{pod_loc}.resourceClaims", "the pod already has resource claims: convert it by hand"
        )
    template = template_name(name)
    if not is_dns_subdomain(template):
        raise InputError.single(
            source, f"{loc}.metadata.name", f"template name {template!r} is not a DNS subdomain"
        )
    requests = _assign_requests(needs, share)
    bad = [r["name"] for r in requests if not is_dns_label(r["name"])]
    if bad:
        raise InputError.single(source, pod_loc, f"request names {bad} are not DNS labels")
    for need in needs:
        _strip(need)
    for container in {id(n.container): n.container for n in needs}.values():
        refs = list(dict.fromkeys(n.request for n in needs if n.container is container))
        claims = (
            [CommentedMap([("name", _CLAIM)])]
            if len(requests) == 1
            else [CommentedMap([("name", _CLAIM), ("request", r)]) for r in refs]
        )
        container.setdefault("resources", CommentedMap())["claims"] = CommentedSeq(claims)
    node["resourceClaims"] = CommentedSeq(
        [CommentedMap([("name", _CLAIM), ("resourceClaimTemplateName", template)])]
    )
    removed = sorted({n.resource for n in needs})
    added = add_tolerations(node, removed, targets.tolerations())
    result = Conversion(
        "",
        [_template(template, namespace, requests, targets.labels(namespace))],
        [what],
        _notes(source, what, needs, requests, share),
    )
    if added:
        result.notes.append(
            Problem(
                source,
                f"{pod_loc}.tolerations",
                "",
                f"{what}: tolerations: {'; '.join(added)}",
                "info",
            )
        )
    if targets.unowned(namespace):
        where = f"namespace {namespace!r}" if namespace else "no namespace (the one it is applied in)"
        result.notes.append(
            Problem(
                source,
                f"{loc}.metadata.namespace",
                "",
                f"{what}: its claim template {template} goes to {where}, which no tenant of the spec owns: "
                "no tenant's labels, admission policy or quota govern its claims",
                "warning",
            )
        )
    queued = _queue_note(doc, source, loc, targets)
    if queued is not None:
        result.notes.append(queued)
    return result


def template_key(template: Obj) -> tuple[str, str]:
    """(namespace, name) of a converted ResourceClaimTemplate."""
    meta = template["metadata"]
    return str(meta.get("namespace") or ""), str(meta["name"])


def _claim_templates(rendered: dict[tuple[str, str], str], one: Conversion, source: str, loc: str) -> None:
    """Refuse a workload whose claim template another one of the file already renders (the same
    workload written twice, or two kinds of one name): both would write one object."""
    for template in one.templates:
        key = template_key(template)
        first = rendered.setdefault(key, loc)
        if first != loc:
            namespace, name = key
            raise InputError.single(
                source,
                loc,
                f"{', '.join(one.converted)} renders ResourceClaimTemplate {namespace or '<default>'}/{name}, "
                f"which {first} already renders: convert each workload once",
            )


def _validate(objects: list[Any], source: str, minor: str) -> None:
    problems = []
    for i, obj in enumerate(objects):
        plain = json.loads(json.dumps(obj, default=str))
        try:
            errors = validate_object(plain, minor)
        except SchemaMissing as exc:
            errors = [str(exc)]
        problems += [
            Problem(source, f"documents[{i}]", "", f"converted {plain.get('kind')} is invalid: {e}")
            for e in errors
        ]
    if problems:
        raise InputError(problems)


def convert_text(
    text: str, source: str, targets: Targets, *, share: bool = False, kubernetes: str = "1.36"
) -> Conversion:
    """Convert every GPU workload of a (multi-document) YAML text; InputError on unsupported input."""
    parse_yaml_documents(text, source)  # duplicate keys, alias bombs and nesting are refused first
    y = _yaml()
    try:
        docs = list(y.load_all(text))
    except YAMLError as exc:
        raise InputError.single(source, "", f"YAML error: {exc}") from None
    seen: set[int] = set()
    for doc in docs:
        unshare(doc, seen)
    result = Conversion("")
    rendered: dict[tuple[str, str], str] = {}
    for i, doc in enumerate(docs):
        loc = f"documents[{i}]"
        if not isinstance(doc, dict) or "kind" not in doc:
            continue
        items = doc.get("items") if doc["kind"] == "List" else [doc]
        if not isinstance(items, list):
            raise InputError.single(source, f"{loc}.items", "a List needs items")
        for j, item in enumerate(items):
            item_loc = f"{loc}.items[{j}]" if doc["kind"] == "List" else loc
            kind = item.get("kind") if isinstance(item, dict) else None
            if kind in POD_SPEC_PATHS:
                one = _convert_workload(item, source, item_loc, targets, share)
                _claim_templates(rendered, one, source, item_loc)
                result.templates += one.templates
                result.converted += one.converted
                result.notes += one.notes
            elif doc["kind"] == "List":
                raise InputError.single(
                    source, f"{item_loc}.kind", f"unsupported List member {kind!r}: convert it by hand"
                )
    if not result.converted:
        raise InputError.single(
            source, "", "no workload requests an nvidia.com/ device-plugin resource: nothing to convert"
        )
    if not targets.tolerations():
        result.notes.append(
            Problem(source, "", "", "no --spec: the DRA pools' taint tolerations were not added", "warning")
        )
    _validate([d for d in docs if isinstance(d, dict)] + result.templates, source, kubernetes)
    out = io.StringIO()
    y.dump_all(docs, out)
    result.text = out.getvalue()
    return result
