"""Gate Jobs' lifecycle under Argo CD: the active wave's hooks only, kept until the next wave, as under Flux."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gpuplatform.labels import LIFECYCLE_LABEL
from gpuplatform.load.stacks import load_stack
from gpuplatform.model import Platform
from gpuplatform.plan.waves import Plan, WaveState, plan_platform
from gpuplatform.render.hook_cleanup import CLEANUP_IDENTITY, cleanup_identity
from gpuplatform.render.meta import KEPT_UNTIL_NEXT_WAVE
from gpuplatform.render.tree import Tree, render_tree
from tests.admission.admission_env import admit

REPO = Path(__file__).resolve().parents[2]
CLEANUP_USER = f"system:serviceaccount:gpuplatform-gates:{CLEANUP_IDENTITY}"
Key = tuple[str, str, str]

FAKE = """#!{python}
import json, sys
args = sys.argv[1:]
state = json.load(open({state!r}))
if args[:2] == ["auth", "can-i"]:
    sys.exit(0 if args[args.index("-n") + 1] in state["can"] else 1)
assert args[0] == "delete", args
with open({calls!r}, "a") as f:
    f.write(json.dumps({{"kinds": args[1].split(","), "ns": args[args.index("-n") + 1],
                         "selector": args[args.index("-l") + 1], "flags": args}}) + "\\n")
"""


def _wave_objects(tree: Tree, state: WaveState, *, argo: bool) -> list[dict[str, Any]]:
    root = f"waves/{state.dir_name}/"
    return [
        obj
        for path, content in tree.files.items()
        if path.startswith(root)
        and isinstance(content, list)
        and not path.endswith("kustomization.yaml")
        and ("/flux/" not in path if argo else not path.startswith(f"{root}argocd"))
        for obj in content
    ]


def _key(obj: dict[str, Any]) -> Key:
    return (obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"])


def _is_hook(obj: dict[str, Any]) -> bool:
    return "argocd.argoproj.io/hook" in obj["metadata"].get("annotations", {})


def _selected(labels: dict[str, str], selector: str) -> bool:
    for term in selector.split(","):
        if "!=" in term:
            key, value = term.split("!=", 1)
            if labels.get(key) == value:
                return False
        else:
            key, value = term.split("=", 1)
            if labels.get(key) != value:
                return False
    return True


class ArgoCluster:
    """The hooks Argo CD leaves on a cluster (argo-cd v3.5.1 gitops-engine): never pruned; a sync
    deletes a live hook of the same name before creating it (`BeforeHookCreation`), and runs the
    PreSync cleanup Job's script (through a fake kubectl) before the gates."""

    def __init__(self, tmp_path: Path) -> None:
        self.hooks: dict[Key, dict[str, Any]] = {}
        self.resources: list[dict[str, Any]] = []
        self.tmp = tmp_path

    def _run(self, job: dict[str, Any], wave: str) -> None:
        state, calls = self.tmp / "state.json", self.tmp / "calls.jsonl"
        can = {
            o["metadata"]["namespace"]
            for o in self.resources
            if o["kind"] == "RoleBinding" and o["metadata"]["name"] == CLEANUP_IDENTITY
        } | {"gpuplatform-gates"}
        state.write_text(json.dumps({"can": sorted(can)}))
        calls.write_text("")
        fake = self.tmp / "kubectl"
        fake.write_text(FAKE.format(python=sys.executable, state=str(state), calls=str(calls)))
        fake.chmod(0o755)
        container = job["spec"]["template"]["spec"]["containers"][0]
        env = {**os.environ, "PATH": f"{self.tmp}:{os.environ['PATH']}", "WAVE": wave}
        subprocess.run(["dash", "-c", container["command"][2]], env=env, check=True, timeout=60)
        for line in calls.read_text().splitlines():
            call = json.loads(line)
            assert "--wait=false" in call["flags"]
            plural = {"Job": "jobs", "ConfigMap": "configmaps"}
            for key, obj in list(self.hooks.items()):
                if (
                    key[1] == call["ns"]
                    and plural.get(key[0]) in call["kinds"]
                    and _selected(obj["metadata"]["labels"], call["selector"])
                ):
                    del self.hooks[key]

    def sync(self, objects: list[dict[str, Any]], wave: str) -> None:
        hooks = sorted(
            (o for o in objects if _is_hook(o)),
            key=lambda o: int(o["metadata"]["annotations"].get("argocd.argoproj.io/sync-wave", "0")),
        )
        for hook in hooks:
            self.hooks.pop(_key(hook), None)
            self.hooks[_key(hook)] = hook
            if hook["metadata"]["name"] == CLEANUP_IDENTITY:
                self._run(hook, wave)
        self.resources = [o for o in objects if not _is_hook(o)]


def _kept(objects: list[dict[str, Any]]) -> set[Key]:
    return {_key(o) for o in objects if o["metadata"]["labels"].get(LIFECYCLE_LABEL)}


@pytest.mark.parametrize("stack", ["reference.py", "mixed-fleet.yaml"])
def test_argo_cd_keeps_the_hooks_flux_keeps_after_every_advance_and_rollback(
    stack: str, tmp_path: Path
) -> None:
    # GIVEN every wave applied in turn, forward and back
    plan = plan_platform(load_stack(REPO / "stacks" / stack)[0].platform)
    tree = render_tree(plan)
    route = list(plan.waves) + list(reversed(plan.waves[:-1]))
    cluster = ArgoCluster(tmp_path)
    piled = 0
    for state in route:
        # WHEN Argo CD syncs the wave
        cluster.sync(_wave_objects(tree, state, argo=True), state.name)
        # THEN it holds exactly the hooks Flux holds for that wave (its Kustomizations' inventory)
        flux = _kept(_wave_objects(tree, state, argo=False))
        assert _kept(list(cluster.hooks.values())) == flux, state.name
        piled = max(piled, len(flux))
    assert piled


def test_every_hook_but_the_cleanup_is_kept_until_the_next_wave(reference: Platform) -> None:
    plan = plan_platform(reference)
    tree = render_tree(plan)
    for state in plan.waves:
        for obj in _wave_objects(tree, state, argo=True):
            if not _is_hook(obj):
                assert LIFECYCLE_LABEL not in obj["metadata"]["labels"], _key(obj)
            elif obj["metadata"]["name"] == CLEANUP_IDENTITY:
                assert LIFECYCLE_LABEL not in obj["metadata"]["labels"]
                assert obj["metadata"]["annotations"]["argocd.argoproj.io/hook"] == "PreSync"
            else:
                # no HookSucceeded: a gate's log is the evidence `gpuplatform evidence` reads
                assert (
                    obj["metadata"]["annotations"]["argocd.argoproj.io/hook-delete-policy"]
                    == "BeforeHookCreation"
                )
                assert obj["metadata"]["labels"][LIFECYCLE_LABEL] == KEPT_UNTIL_NEXT_WAVE[LIFECYCLE_LABEL]


def _rbac(tree: Tree) -> list[dict[str, Any]]:
    kinds = {"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"}
    return [o for c in tree.files.values() if isinstance(c, list) for o in c if o["kind"] in kinds]


def test_the_cleanup_identity_may_only_list_and_delete_hook_kinds_where_hooks_live(
    reference: Platform,
) -> None:
    plan = plan_platform(reference)
    tree = render_tree(plan)
    objects = _rbac(tree)
    subject = {"kind": "ServiceAccount", "name": CLEANUP_IDENTITY, "namespace": "gpuplatform-gates"}
    bindings = [o for o in objects if o["kind"].endswith("Binding") and subject in o["subjects"]]
    assert {(b["kind"], b["metadata"].get("namespace")) for b in bindings} == {
        ("RoleBinding", "gpuplatform-gates"),
        ("RoleBinding", "gpu-dra-pilot"),
    }
    for binding in bindings:
        # only the cleanup ServiceAccount is bound: no tenant, no other identity gains it
        assert binding["subjects"] == [subject]
        assert binding["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "Role",
            "name": CLEANUP_IDENTITY,
        }
    for role in (o for o in objects if o["kind"] == "Role" and o["metadata"]["name"] == CLEANUP_IDENTITY):
        for rule in role["rules"]:
            assert rule["verbs"] == ["delete", "list"]
            assert (rule["apiGroups"], rule["resources"]) in ((["batch"], ["jobs"]), ([""], ["configmaps"]))
    other = [
        o
        for o in objects
        if o["kind"].endswith("Binding") and o["roleRef"]["name"] == CLEANUP_IDENTITY and o not in bindings
    ]
    assert other == []


def test_nothing_the_tree_grants_can_delete_a_node(reference: Platform) -> None:
    tree = render_tree(plan_platform(reference))
    for role in (o for o in _rbac(tree) if o["kind"] in ("Role", "ClusterRole")):
        for rule in role.get("rules", []):
            if {"", "*"} & set(rule.get("apiGroups", [])) and {"nodes", "*"} & set(rule.get("resources", [])):
                assert not {"delete", "deletecollection", "*"} & set(rule["verbs"]), role["metadata"]["name"]


@pytest.mark.parametrize(
    ("labels", "allowed"),
    [
        (dict(KEPT_UNTIL_NEXT_WAVE), True),
        ({}, False),
        ({LIFECYCLE_LABEL: "forever"}, False),
        ({"gpuplatform.dev/gate": "inventory"}, False),
    ],
    ids=["hook", "unlabelled", "other-value", "gate-label-only"],
)
def test_the_cleanup_identity_may_delete_only_labelled_hooks(
    reference: Platform, labels: dict[str, str], allowed: bool
) -> None:
    plan = plan_platform(reference)
    [policy] = [o for o in cleanup_identity(plan, "baseline") if o["kind"] == "ValidatingAdmissionPolicy"]
    assert policy["spec"]["matchConstraints"]["resourceRules"][0]["operations"] == ["DELETE"]
    old = {"kind": "Node", "metadata": {"name": "x", "labels": labels}}
    denied = admit(policy, None, old=old, user=CLEANUP_USER)
    assert (denied == []) is allowed, denied
    assert (
        admit(policy, None, old=old, user="system:serviceaccount:gpuplatform-gates:gpuplatform-gates") == []
    )


def test_a_flux_only_platform_renders_no_cleanup(reference: Platform) -> None:
    plan: Plan = plan_platform(load_stack(REPO / "stacks" / "nim-lab.yaml")[0].platform)
    tree = render_tree(plan)
    names = [o.get("metadata", {}).get("name") for c in tree.files.values() if isinstance(c, list) for o in c]
    assert CLEANUP_IDENTITY not in names
    assert any(str(n).startswith("gate-") for n in names)
