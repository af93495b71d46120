"""Layer 15-allocator-switch: the two Jobs that move a node between allocators, and their identity.

`release` (before the releases and the node labels) takes `nvidia.com/dra-kubelet-plugin` off the
nodes the wave declares legacy and waits until their kubelet plugin pods and ResourceSlices are
gone, so the device plugin only comes back to a node the DRA driver has left. `enable` (after the
node labels) waits until the device plugin has left every node labelled DRA that has no kubelet
plugin label yet (no device-plugin pod, no `nvidia.com/*` resource allocatable — whole GPUs, MIG
slices, time-sliced or renamed — and no live pod whose containers or init containers request one)
and only then labels it; it never overwrites a value, so a node the driver manager paused
for a driver upgrade (`paused-for-driver-upgrade`) stays paused. No GitOps engine owns that label:
an engine would write it back while the driver manager has it paused (Argo CD selfHeal, Flux
drift correction). The Jobs run as `gpuplatform-switch`, which may patch Nodes, and a
ValidatingAdmissionPolicy lets that identity change nothing on a Node but this one label: it
compares every other field of the old and the new Node (`UNCHANGED`).
"""

from __future__ import annotations

import hashlib
import json

from gpuplatform.gates.matchers import DEVICE_PLUGIN_LABEL, DRA_DRIVER, DRA_KUBELET_PLUGIN_SUFFIX
from gpuplatform.labels import DRA_PLUGIN_LABEL, NVIDIA_RESOURCE_PREFIX, SWITCH_LABEL
from gpuplatform.model.containers import pinned_image
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.cluster_admission import API, core_policy_match, policy_binding
from gpuplatform.render.meta import (
    KEPT_UNTIL_NEXT_WAVE,
    Obj,
    cluster_identity,
    k8s_object,
    restricted_security_context,
)
from gpuplatform.render.selectors import cel_string
from gpuplatform.render.validation import RETRY_EXIT_CODE, pod_failure_policy

__all__ = ["SWITCH_IDENTITY", "render_switch_jobs", "switch_identity"]

SWITCH_IDENTITY = "gpuplatform-switch"
#: An attempt that is still not safe after its deadline exits 3; the Job ignores that failure and
#: starts a new attempt (Kubernetes `podFailurePolicy` action Ignore), so the switch waits, holding
#: the sync, until the operator has made the nodes safe; no engine has to re-run a failed Job.
NOT_YET = RETRY_EXIT_CODE

_WAIT = """
deadline=$(( $(date +%s) + {timeout} ))
until out=$(check 2>&1); do
  if [ "$(date +%s)" -ge "$deadline" ]; then echo "$out" >&2; echo "{name}: not safe yet, next attempt" >&2; exit {code}; fi
  sleep 10
done
"""


def _quote(value: str) -> str:
    return "'" + value.replace("'", "'\"'\"'") + "'"


def _release_body() -> str:
    return f"""
for node in $NODES; do
  labelled=$(kubectl get node "$node" -o json 2>/dev/null | jq -r '.metadata.labels["{DRA_PLUGIN_LABEL}"] // empty') || labelled=""
  if [ -n "$labelled" ]; then kubectl label node "$node" {DRA_PLUGIN_LABEL}-; fi
done
check() {{
  rc=0
  pods=$(kubectl get pods -n "$DRA_NAMESPACE" -o json)
  slices=$(kubectl get resourceslices -o json)
  for node in $NODES; do
    n=$(printf '%s' "$pods" | jq --arg n "$node" '[.items[] | select(.spec.nodeName == $n)
      | select([.metadata.ownerReferences[]? | select(.kind == "DaemonSet" and (.name | endswith("{DRA_KUBELET_PLUGIN_SUFFIX}")))] | length > 0)] | length')
    if [ "$n" != 0 ]; then echo "node $node still runs the DRA kubelet plugin"; rc=1; fi
    s=$(printf '%s' "$slices" | jq --arg n "$node" '[.items[] | select(.spec.driver == "{DRA_DRIVER}" and .spec.nodeName == $n)] | length')
    if [ "$s" != 0 ]; then echo "node $node still has {DRA_DRIVER} ResourceSlices"; rc=1; fi
  done
  return $rc
}}"""


def _enable_body() -> str:
    key, value = DEVICE_PLUGIN_LABEL
    prefix = NVIDIA_RESOURCE_PREFIX
    return f"""
pending() {{ kubectl get nodes -l "$MODE_LABEL=dra,!{DRA_PLUGIN_LABEL}" -o jsonpath='{{.items[*].metadata.name}}'; }}
check_node() {{
  rc=0
  advertised=$(kubectl get node "$1" -o json | jq -r '[(.status.allocatable // {{}}) | to_entries[]
    | select((.key | startswith("{prefix}")) and ((.value | tostring) != "0")) | "\\(.key)=\\(.value)"] | join(",")')
  if [ -n "$advertised" ]; then echo "node $1 still advertises $advertised"; rc=1; fi
  held=$(kubectl get pods -A --field-selector "spec.nodeName=$1" -o json | jq -r '.items[] | select(.status.phase != "Succeeded" and .status.phase != "Failed")
    | select(.metadata.labels["{key}"] == "{value}" or ([(.spec.initContainers // []) + (.spec.containers // []) | .[].resources
      | (.limits // {{}}), (.requests // {{}}) | keys[] | select(startswith("{prefix}"))] | length) > 0)
    | "\\(.metadata.namespace)/\\(.metadata.name)"')
  for pod in $held; do echo "pod $pod holds or serves device-plugin GPUs on node $1"; rc=1; done
  return $rc
}}
check() {{
  rc=0
  for node in $(pending); do check_node "$node" || rc=1; done
  return $rc
}}"""


def _enable_action() -> str:
    return f"""for node in $(pending); do
  if check_node "$node" >/dev/null; then kubectl label node "$node" {DRA_PLUGIN_LABEL}=true; else exit {NOT_YET}; fi
done
"""


def _script(name: str, variables: dict[str, str], body: str, timeout: int, action: str = "") -> str:
    lines = ["set -eu", *[f"{k}={_quote(v)}" for k, v in sorted(variables.items())], body.strip()]
    return (
        "\n".join(lines)
        + _WAIT.format(timeout=timeout, name=name, code=NOT_YET)
        + action
        + f'echo "{name}: done"\n'
    )


def _legacy_nodes(plan: Plan, state: WaveState) -> list[str]:
    return [
        n for pool in plan.platform.node_pools if state.pool_modes[pool.name] == "legacy" for n in pool.nodes
    ]


def _job(plan: Plan, state: WaveState, action: str, script: str) -> Obj:
    """The switch Job, named for a digest of the wave and its whole spec (script, image: the pod
    template is immutable, so a changed one must be a new Job)."""
    d = plan.platform.delivery
    container = {
        "name": "switch",
        "image": pinned_image(d.kubectl_image, d.kubectl_image_digest),
        "command": ["sh", "-c", script],
        "securityContext": restricted_security_context(),
    }
    spec = {
        "backoffLimit": 0,
        "podFailurePolicy": pod_failure_policy("switch"),
        "template": {
            "metadata": {"labels": {SWITCH_LABEL: action}},
            "spec": {
                "serviceAccountName": SWITCH_IDENTITY,
                "restartPolicy": "Never",
                "containers": [container],
                "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
            },
        },
    }
    text = f"{plan.platform.name}/{state.dir_name}\n{json.dumps(spec, sort_keys=True)}"
    return k8s_object(
        "batch/v1",
        "Job",
        f"switch-{action}-{hashlib.sha256(text.encode()).hexdigest()[:10]}",
        wave=state.name,
        namespace=d.gates_namespace,
        labels={SWITCH_LABEL: action, **KEPT_UNTIL_NEXT_WAVE},
        annotations={
            "argocd.argoproj.io/hook": "Sync",
            "argocd.argoproj.io/hook-delete-policy": "BeforeHookCreation",
        },
        spec=spec,
    )


def render_switch_jobs(plan: Plan, state: WaveState) -> list[Obj]:
    """`release` where the wave has legacy nodes and the driver exists in some wave; `enable` where it has DRA pools."""
    p = plan.platform
    timeout = p.delivery.timeout_minutes * 60
    jobs = []
    legacy = _legacy_nodes(plan, state)
    if legacy and any(s.driver_installed for s in plan.waves):
        variables = {"NODES": " ".join(legacy), "DRA_NAMESPACE": p.dra_driver.namespace}
        jobs.append(_job(plan, state, "release", _script("release", variables, _release_body(), timeout)))
    if state.dra_pools:
        variables = {"MODE_LABEL": p.mode_label_key}
        script = _script("enable", variables, _enable_body(), timeout, _enable_action())
        jobs.append(_job(plan, state, "enable", script))
    return jobs


def switch_folder(obj: Obj) -> str:
    """The subfolder of `15-allocator-switch/` an object goes in (its action)."""
    return str(obj["metadata"]["labels"][SWITCH_LABEL])


#: Every field of a Node the switch identity may not change, compared old to new. An ownerReference
#: (to an owner that does not exist, the garbage collector deletes the Node), a finalizer or an
#: annotation is as dangerous as a taint. Not compared: the labels (only the switch's own may
#: change), `metadata.resourceVersion` and `metadata.managedFields`, which the API server itself
#: writes on every update.
UNCHANGED = (
    "metadata.name",
    "metadata.generateName",
    "metadata.namespace",
    "metadata.selfLink",
    "metadata.uid",
    "metadata.generation",
    "metadata.creationTimestamp",
    "metadata.deletionTimestamp",
    "metadata.deletionGracePeriodSeconds",
    "metadata.annotations",
    "metadata.ownerReferences",
    "metadata.finalizers",
    "spec",
    "status",
)


def _unchanged(path: str) -> dict[str, str]:
    """A validation that `path` is present in both objects with the same value, or in neither."""
    new, old = f"object.{path}", f"oldObject.{path}"
    return {
        "expression": f"has({new}) == has({old}) && (!has({new}) || {new} == {old})",
        "message": f"{SWITCH_IDENTITY} may not change a Node's {path}",
    }


def _policy(plan: Plan, wave: str) -> list[Obj]:
    d = plan.platform.delivery
    user = f"system:serviceaccount:{d.gates_namespace}:{SWITCH_IDENTITY}"
    label = cel_string(DRA_PLUGIN_LABEL)
    name = f"{SWITCH_IDENTITY}-{plan.platform.name}"
    policy = k8s_object(
        API,
        "ValidatingAdmissionPolicy",
        name,
        wave=wave,
        spec={
            **core_policy_match(["nodes"], ["UPDATE"]),
            "matchConditions": [
                {"name": "switch-identity", "expression": f"request.userInfo.username == {cel_string(user)}"}
            ],
            "variables": [
                {"name": "new", "expression": "has(object.metadata.labels) ? object.metadata.labels : {}"},
                {
                    "name": "old",
                    "expression": "has(oldObject.metadata.labels) ? oldObject.metadata.labels : {}",
                },
            ],
            "validations": [
                *(_unchanged(path) for path in UNCHANGED),
                {
                    "expression": f"variables.new.all(k, k == {label} || (k in variables.old && variables.old[k] == variables.new[k]))"
                    f" && variables.old.all(k, k == {label} || k in variables.new)",
                    "message": f"{SWITCH_IDENTITY} may change no Node label but {DRA_PLUGIN_LABEL}",
                },
                {
                    "expression": f"!({label} in variables.new) || variables.new[{label}] == 'true'",
                    "message": f"{SWITCH_IDENTITY} may only set {DRA_PLUGIN_LABEL}=true or remove it",
                },
            ],
        },
    )
    return [policy, policy_binding(name, wave)]


def switch_identity(plan: Plan, wave: str) -> list[Obj]:
    """ServiceAccount, ClusterRole(+Binding) and the label-only admission policy of the switch Jobs."""
    d = plan.platform.delivery
    name = f"{SWITCH_IDENTITY}-{plan.platform.name}"
    rules = [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"], "verbs": ["list"]},
    ]
    return [
        *cluster_identity(SWITCH_IDENTITY, d.gates_namespace, name, rules, wave=wave),
        *_policy(plan, wave),
    ]
