"""Pools by selector: one node group, several pools; selection alike in Python and the gates' jq;
overlap decided from the selectors (GP103)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jq
import pytest
from pydantic import ValidationError

from gpuplatform.evidence.twins.reading import found
from gpuplatform.gates.nodes import PoolSelector, overlap, pool_selector
from gpuplatform.gates.programs import prelude_for
from gpuplatform.load.stacks import load_stack
from gpuplatform.model.nodes import NodePool
from tests.policy.helpers import codes, findings
from tests.specs import minimal_spec

MIG = "nvidia.com/mig.config"
GKE = "cloud.google.com/gke-nodepool"


def _a100(name: str, selector: dict[str, Any] | None, **extra: Any) -> dict[str, Any]:
    pool: dict[str, Any] = {
        "name": name,
        "product": "A100-80GB",
        "provisioner": {"kind": "node-group", "cloud": "gke", "name": "a100", "minNodes": 1},
        **extra,
    }
    if selector is not None:
        pool["selector"] = selector
    return pool


MIG_POOL = _a100("a100-mig", {"matchLabels": {MIG: "all-1g.10gb"}})
WHOLE_POOL = _a100(
    "a100-whole", {"matchExpressions": [{"key": MIG, "operator": "NotIn", "values": ["all-1g.10gb"]}]}
)


def _node(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}}


#: Nodes as GKE and the GPU Operator label them: the MIG manager's config label on some, absent on others.
NODES = [
    _node("a100-1", **{GKE: "a100", MIG: "all-1g.10gb"}),
    _node("a100-2", **{GKE: "a100", MIG: "all-disabled"}),
    _node("a100-3", **{GKE: "a100"}),
    _node("h100-1", **{GKE: "h100", MIG: "all-1g.10gb"}),
]


def _selector(pool: dict[str, Any]) -> PoolSelector:
    return pool_selector(NodePool.model_validate(pool))


def _jq_found(selectors: list[PoolSelector]) -> dict[str, list[str]]:
    """The pools' nodes as the gate scripts' `found` finds them (the jq binding)."""
    program = jq.compile(
        prelude_for("found($in)") + ". as $in | found($in)",
        args={"data": {"pools": [s.as_data() for s in selectors]}},
    )
    return {p["name"]: sorted(p["found"]) for p in program.input_value({"nodes": NODES}).first()}


def test_one_node_group_holds_a_mig_pool_and_a_whole_pool() -> None:
    # GIVEN the GKE node pool a100 split by the MIG manager's config label
    mig, whole = _selector(MIG_POOL), _selector(WHOLE_POOL)
    # THEN Python and the gates' jq find the same nodes: NotIn also takes the node without the label
    assert mig.found(NODES) == ["a100-1"]
    assert whole.found(NODES) == ["a100-2", "a100-3"]
    assert _jq_found([mig, whole]) == {"a100-mig": ["a100-1"], "a100-whole": ["a100-2", "a100-3"]}
    twin = found({"nodes": NODES}, {"pools": [mig.as_data(), whole.as_data()]})
    assert {p["name"]: sorted(p["found"]) for p in twin} == _jq_found([mig, whole])
    # and kubectl (runbooks) and pod affinity select the same way
    assert whole.kubectl_args() == ["-l", f"{GKE}=a100,{MIG} notin (all-1g.10gb)"]
    assert whole.node_selector_term()["matchExpressions"][1] == {
        "key": MIG,
        "operator": "NotIn",
        "values": ["all-1g.10gb"],
    }
    # and the two selectors cannot select one node
    assert overlap(mig, whole) is None
    # and a node labelled as simulate labels a member is found in its pool only
    for sel in (mig, whole):
        node = _node("sim", **sel.member_labels())
        assert [s.pool for s in (mig, whole) if s.matches(node)] == [sel.pool]


@pytest.mark.parametrize(
    ("a", "b", "disjoint"),
    [
        ({"matchLabels": {MIG: "all-1g.10gb"}}, {"matchLabels": {MIG: "all-disabled"}}, True),
        ({"matchLabels": {MIG: "all-1g.10gb"}}, {"matchLabels": {"zone": "b"}}, False),
        (
            {"matchExpressions": [{"key": MIG, "operator": "In", "values": ["a", "b"]}]},
            {"matchExpressions": [{"key": MIG, "operator": "NotIn", "values": ["a"]}]},
            False,
        ),
        (
            {"matchExpressions": [{"key": MIG, "operator": "Exists"}]},
            {"matchExpressions": [{"key": MIG, "operator": "DoesNotExist"}]},
            True,
        ),
        (
            {"matchExpressions": [{"key": MIG, "operator": "NotIn", "values": ["a"]}]},
            {"matchExpressions": [{"key": MIG, "operator": "DoesNotExist"}]},
            False,
        ),
    ],
)
def test_overlap_is_decided_by_label_algebra(a: dict[str, Any], b: dict[str, Any], disjoint: bool) -> None:
    found = overlap(_selector(_a100("x", a)), _selector(_a100("y", b)))
    assert (found is None) == disjoint
    if not disjoint:
        assert found is not None and f"{GKE}=a100" in found


def test_a_selector_needs_a_provisioner_and_karpenter_pools_keep_their_own_nodepool() -> None:
    with pytest.raises(ValidationError, match="name the provisioner too"):
        NodePool.model_validate(
            {"name": "x", "product": "A100-80GB", "selector": {"matchLabels": {MIG: "a"}}}
        )
    karpenter = {**MIG_POOL, "provisioner": {"kind": "karpenter", "name": "gpu"}}
    with pytest.raises(ValidationError, match="its own NodePool"):
        NodePool.model_validate(karpenter)
    with pytest.raises(ValidationError, match="operator NotIn needs values"):
        NodePool.model_validate(_a100("x", {"matchExpressions": [{"key": MIG, "operator": "NotIn"}]}))


def _spec(*pools: dict[str, Any]) -> dict[str, Any]:
    doc = minimal_spec()
    doc["spec"]["nodePools"] = [doc["spec"]["nodePools"][1], *pools]
    return doc


def test_gp103_exclusive_selectors_on_one_node_group_pass(tmp_path: Path) -> None:
    assert "GP103" not in codes(tmp_path, _spec(MIG_POOL, WHOLE_POOL))


def test_gp103_overlapping_selectors_name_both_pools_and_the_labels(tmp_path: Path) -> None:
    # GIVEN the whole pool excluding another layout than the MIG pool's: a node could be in both
    whole = _a100(
        "a100-whole", {"matchExpressions": [{"key": MIG, "operator": "NotIn", "values": ["all-2g.20gb"]}]}
    )
    (found,) = [p for p in findings(tmp_path, _spec(MIG_POOL, whole)) if p.code == "GP103"]
    assert (found.loc, found.severity) == ("spec.nodePools[2].selector", "error")
    assert "pools 'a100-mig' and 'a100-whole' can both select a node labelled" in found.message
    assert f"{MIG}=all-1g.10gb" in found.message


def test_gp103_a_whole_node_group_pool_overlaps_a_selector_pool_on_it(tmp_path: Path) -> None:
    whole = _a100("a100-all", None)
    (found,) = [p for p in findings(tmp_path, _spec(whole, MIG_POOL)) if p.code == "GP103"]
    assert "pools 'a100-all' and 'a100-mig'" in found.message


MIG = "nvidia.com/mig.config"


def _gke_fleet(version: str = "1.35.2") -> dict[str, Any]:
    """A GKE-like cluster: the A100 node pool split by the MIG manager's config label into its
    MIG-partitioned nodes (`all-1g.10gb`, the GPU Operator's default config name) and its whole-GPU
    ones (`all-disabled` or no label), the whole pool moving in the pilot wave."""
    mig = _a100("a100-mig", {"matchLabels": {MIG: "all-1g.10gb"}})
    whole = _a100(
        "a100-whole", {"matchExpressions": [{"key": MIG, "operator": "NotIn", "values": ["all-1g.10gb"]}]}
    )
    doc = _spec(mig, {**whole, "migratesIn": "pilot"})
    doc["spec"]["nodePools"] = doc["spec"]["nodePools"][1:]
    doc["spec"]["nodePools"][0]["migLayout"] = ["1g.10gb"] * 7
    doc["spec"]["kubernetes"] = {"version": version}
    return doc


def _two_groups(doc: dict[str, Any]) -> dict[str, Any]:
    """The same fleet with each pool in a node group of its own (no selectors)."""
    for pool, group in zip(doc["spec"]["nodePools"], ("a100m", "a100w"), strict=True):
        pool.pop("selector")
        pool["provisioner"]["name"] = group
    return doc


def _summary(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("  argocd ")]


@pytest.mark.parametrize("version", ["1.35.2", "1.36.1"])
def test_a_gke_a100_pool_split_by_its_mig_config_passes_every_command(tmp_path: Path, version: str) -> None:
    from click.testing import CliRunner

    from gpuplatform.cli import main
    from tests.specs import write_spec

    runner = CliRunner()
    spec = str(write_spec(tmp_path / "lab.yaml", _gke_fleet(version)))
    # check (rules, capacity and the simulation of every transition), capacity and simulate agree
    for command in (["check", spec], ["capacity", spec, "--all"], ["simulate", spec, "--all"]):
        result = runner.invoke(main, command)
        assert result.exit_code == 0, (command, result.output)
    out = tmp_path / "out"
    result = runner.invoke(main, ["synth", spec, "--out", str(out)])
    assert result.exit_code == 0, result.output
    # the whole pool's hand-off tells the node group's owner which of its nodes are the pool's
    (handoff,) = [
        p
        for p in out.rglob("*")
        if p.is_file() and "handoff" in p.parts and "a100-whole" in p.name and "01-pilot" in str(p)
    ]
    assert "operator: NotIn" in handoff.read_text() and MIG in handoff.read_text()


def test_a_mig_pool_of_its_own_node_group_carries_its_config_in_the_template(tmp_path: Path) -> None:
    # GIVEN the same fleet with each pool in a node group of its own: the cutover replaces the MIG
    # pool's nodes, which come up with the template's labels only
    from click.testing import CliRunner

    from gpuplatform.cli import main
    from gpuplatform.render.nodes import provisioner_labels
    from tests.specs import write_spec

    runner = CliRunner()
    split = str(write_spec(tmp_path / "split.yaml", _two_groups(_gke_fleet())))
    # THEN every hand-off of the MIG pool keeps nvidia.com/mig.config, so the new nodes are
    # partitioned again and every transition proves (without it the inventory gate waits forever)
    result = runner.invoke(main, ["simulate", split, "--all"])
    assert result.exit_code == 0, result.output
    (loaded,) = load_stack(Path(split))
    pool = next(p for p in loaded.platform.node_pools if p.name == "a100-mig")
    for mode in ("legacy", "dra"):
        assert provisioner_labels(loaded.platform, pool, mode)[MIG] == "all-1g.10gb"


def test_gp103_pools_of_different_provisioners_never_share_a_node(tmp_path: Path) -> None:
    # GIVEN a Karpenter NodePool and an EKS node group: label algebra alone cannot tell them apart
    karpenter = {"name": "l40s", "product": "L40S", "provisioner": {"kind": "karpenter", "name": "gpu-l40s"}}
    eks = {
        "name": "l4",
        "product": "L4",
        "provisioner": {"kind": "node-group", "cloud": "eks", "name": "gpu-l4"},
    }
    # THEN no GP103: a node has one provisioner
    assert "GP103" not in codes(tmp_path, _spec(karpenter, eks))


def test_a_selector_pool_is_labelled_node_by_node_never_through_its_groups_template(tmp_path: Path) -> None:
    # GIVEN the GKE A100 node pool split by label, its whole-GPU nodes moving in the pilot wave
    from click.testing import CliRunner

    from gpuplatform.cli import main
    from tests.specs import write_spec

    spec = str(write_spec(tmp_path / "lab.yaml", _gke_fleet()))
    out = tmp_path / "out"
    assert CliRunner().invoke(main, ["synth", spec, "--out", str(out), "--allow", "GP290"]).exit_code == 0
    runbooks = "\n".join(p.read_text() for p in out.rglob("runbooks/*.md"))
    # THEN no runbook changes the node pool's template (it would move the MIG pool's nodes too)
    assert "gcloud container node-pools update" not in runbooks
    # AND the pilot labels and taints exactly the selected nodes, and its rollback undoes it
    whole = "-l 'cloud.google.com/gke-nodepool=a100," + MIG + " notin (all-1g.10gb)'"
    assert (
        f"kubectl taint nodes {whole} --overwrite gpu-scheduling.lab.example.com/mode=dra:NoSchedule"
        in runbooks
    )
    assert f"kubectl label nodes {whole} --overwrite gpu-scheduling.lab.example.com/mode=dra " in runbooks
    # AND to DRA the kubelet plugin's label is set only once the device plugin is gone (by the same
    # chain, whenever the sync's enable Job ran); back, the plugin's label goes first, the rest once
    # its ResourceSlices are gone
    dra = f"kubectl label nodes {whole} --overwrite gpu-scheduling.lab.example.com/mode=dra"
    line = runbooks[runbooks.index(dra) :].splitlines()[0]
    until_gone = line.index("until left=$(kubectl get $n -o json")
    assert line.index("nvidia.com/dra-kubelet-plugin=true") > until_gone
    assert "nvidia.com/dra-kubelet-plugin=true" not in line[:until_gone]
    leave = runbooks.index(f"kubectl label nodes {whole} nvidia.com/dra-kubelet-plugin-")
    wait = runbooks.index(
        "until slices=$(kubectl get resourceslices --field-selector spec.nodeName=${n#node/}", leave
    )
    back = runbooks.index(
        f"kubectl label nodes {whole} --overwrite gpu-scheduling.lab.example.com/mode=legacy", wait
    )
    untaint = runbooks.index(
        f"kubectl taint nodes {whole} gpu-scheduling.lab.example.com/mode=dra:NoSchedule-", back
    )
    assert leave < wait < back < untaint


def test_gp103_names_pools_of_two_provisioners_found_by_the_same_node_labels(tmp_path: Path) -> None:
    # issue 39 (low): two MachineDeployments' pools found by one `nodeLabels` select the same nodes
    labels = {"node.cluster.x-k8s.io/pool": "gpu"}

    def capi(name: str, deployment: str) -> dict[str, Any]:
        provisioner = {"kind": "cluster-api", "name": deployment, "nodeLabels": labels}
        return {"name": name, "product": "A100-80GB", "provisioner": provisioner}

    (found,) = [
        p for p in findings(tmp_path, _spec(capi("a", "md-a"), capi("b", "md-b"))) if p.code == "GP103"
    ]
    assert found.loc == "spec.nodePools[2].provisioner.nodeLabels"
    assert "pools 'a' and 'b' can both select a node labelled node.cluster.x-k8s.io/pool=gpu" in found.message
    # AND pools of two node groups found by their groups' own labels never share a node
    own = [
        _a100("x", None),
        {**_a100("y", None), "provisioner": {"kind": "node-group", "cloud": "gke", "name": "h"}},
    ]
    assert "GP103" not in codes(tmp_path, _spec(*own))
