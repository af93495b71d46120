"""The offline half of each gate: the gate Job's own jq program, run on a snapshot.

On top of what the Job judges, the offline evaluator adds what needs the spec and the CEL engine
(every tier's and bridge's selector must match a device the wave's DRA nodes publish), and reads
the proof the gate Job recorded when the workload it proved with is gone (the claim pilot and the
bridge pods are removed once proven, so a snapshot taken afterwards holds only the Job's log).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from gpuplatform.background import Background
from gpuplatform.cel import CelError, DeviceSelector, DeviceSet
from gpuplatform.evidence.summary import summarise
from gpuplatform.evidence.twins import TWINS, Unlike, found
from gpuplatform.evidence.verdict import GateResult, jq_input, judge, run_programs
from gpuplatform.gates import Gate, evidence_checks, gate_data, gates_for_wave
from gpuplatform.gates.matchers import DRA_DRIVER
from gpuplatform.gates.nodes import pool_selectors
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.gate_facts import wave_data
from gpuplatform.render.gate_jobs import gate_job_names
from gpuplatform.render.selectors import full_gpu_expression, tier_expression
from gpuplatform.render.validation import validation_jobs
from gpuplatform.snapshot.project import project, projector
from gpuplatform.snapshot.read import Snapshot
from gpuplatform.versions import parse_release

__all__ = ["GateResult", "evaluate_gate", "evaluate_gates", "evaluate_wave", "extra_checks"]


def _read(kind: str, snapshot: Snapshot) -> list[dict[str, Any]] | None:
    """The snapshot's items of `kind` as the programs read them: Nodes and Pods projected to the
    fields they read (as they are read, when first read here), ResourceSlices' devices summed up by
    kind (None when the kind is missing)."""
    items = snapshot.items(kind, projector(kind))
    if items is None:
        return None
    if kind == "resourceslices":
        return summarise(items, str(snapshot.folder / "resourceslices.json"))
    return items if kind in snapshot.kept else project(kind, items)


def _document(kinds: set[str], snapshot: Snapshot) -> dict[str, Any]:
    """The kinds the programs read, as they read them, and the logs."""
    return {kind: _read(kind, snapshot) for kind in sorted(kinds)} | {"logs": snapshot.runtime_logs()}


def _dra_devices(plan: Plan, state: WaveState, snapshot: Snapshot) -> list[tuple[str, list[dict[str, Any]]]]:
    """(driver, devices) of every ResourceSlice published by a node of this wave's DRA pools."""
    selectors = pool_selectors(plan.platform)
    nodes = {
        name for pool in state.dra_pools for name in selectors[pool].found(snapshot.items("nodes") or [])
    }
    return [
        (str(s["spec"]["driver"]), s["spec"].get("devices") or [])
        for s in snapshot.items("resourceslices") or []
        if s.get("spec", {}).get("driver") == DRA_DRIVER and s["spec"].get("nodeName") in nodes
    ]


#: Per tier and bridge of the wave: (label, devices of the DRA nodes it matches, evaluation errors).
_SelectorMatches = list[tuple[str, int, list[str]]]


def _selector_matches(plan: Plan, state: WaveState, snapshot: Snapshot) -> _SelectorMatches | None:
    """How many devices the wave's DRA nodes publish that each tier and bridge selects (None when
    the snapshot lacks ResourceSlices or Nodes)."""
    if snapshot.items("resourceslices") is None or snapshot.items("nodes") is None:
        return None
    p = plan.platform
    minor = parse_release(p.kubernetes.version).minor
    tiers = {t.name: t for t in p.tiers}
    targets = [(f"tier {name}", tier_expression(tiers[name])) for name in state.tiers]
    targets += [(f"bridge {name}", full_gpu_expression()) for name in state.bridges]
    selectors = [(label, DeviceSelector(e, kubernetes=minor, new_expression=False)) for label, e in targets]
    reads = {read for _, selector in selectors for read in selector.reads}
    published: dict[str, DeviceSet] = {}
    for i, (driver, devices) in enumerate(_dra_devices(plan, state, snapshot)):
        published.setdefault(driver, DeviceSet(driver, reads)).add(i, devices)
    matches: _SelectorMatches = []
    for label, selector in selectors:
        count, errors = 0, []
        for prepared in published.values():
            outcomes = selector.row_verdicts(prepared)
            errors += [str(o) for o in outcomes if isinstance(o, CelError)]
            count += sum(prepared.counts([o is True for o in outcomes]).values())
        matches.append((label, count, errors))
    return matches


def _selectors(matches: _SelectorMatches | None, result: GateResult) -> None:
    """Every tier and bridge of the wave matches at least one device its DRA nodes publish."""
    for label, count, errors in matches or ():
        result.findings += [f"{label}: {e}" for e in errors]
        if count:
            result.proof.append(f"{label}: {count} device(s) of the DRA nodes match")
        elif result.unknowns:
            result.unknowns.append(f"{label} matches no device of the DRA nodes found so far")
        else:
            result.findings.append(f"{label} matches no device the DRA nodes publish")


#: Gates whose proving pods are removed once proven: offline, their Job's log is the proof.
_RECORDING = frozenset({"claim-pilot", "bridge"})


def _recorded(plan: Plan, snapshot: Snapshot, result: GateResult, jobs: Mapping[str, str]) -> None:
    """When the proving pods are gone, the proof the gate's Job (named in `jobs`, the wave's gate
    Jobs) printed before removing them."""
    if result.findings or not result.unknowns:
        return
    job = jobs[result.id]
    namespace = plan.platform.delivery.gates_namespace
    for pod in snapshot.items("pods") or []:
        meta = pod.get("metadata") or {}
        labels = meta.get("labels") or {}
        if meta.get("namespace") != namespace or job not in (
            labels.get("job-name"),
            labels.get("batch.kubernetes.io/job-name"),
        ):
            continue
        log = snapshot.logs.get(f"{namespace}/{meta.get('name')}", "")
        if f"gate {result.id} holds" not in log.splitlines():
            continue
        result.unknowns.clear()
        proofs = [line.removeprefix("proof: ") for line in log.splitlines() if line.startswith("proof: ")]
        result.proof += [f"recorded by gate Job {namespace}/{job}: {line}" for line in proofs]
        return


_Run = tuple[str, tuple[str, ...], dict[str, Any]]


def _pools(runs: list[_Run], document: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The wave's pools with their nodes (`found`) for the twins; None when a node has a value of a
    type the API never serves (the gates that read the pools are then left to jq)."""
    data = next((d for _, _, d in runs if "pools" in d), None)
    if data is None or document.get("nodes") is None:
        return []
    try:
        return found(document, data)
    except Unlike:
        return None


def _by_twins(
    runs: list[_Run],
    document: dict[str, Any],
    pools: list[dict[str, Any]] | None,
    judged: dict[int, list[str]],
) -> None:
    """Judge by its twin each gate of `runs` not yet `judged` whose kinds `document` holds (by its
    index); a twin that meets a value of a type the API never serves leaves its gate to jq."""
    for i, (gate_id, kinds, data) in enumerate(runs):
        twin = TWINS.get(gate_id)
        if i in judged or twin is None or any(kind not in document for kind in kinds):
            continue
        if pools is None and "pools" in data:
            continue
        try:
            judged[i] = twin(document, data, pools or [])
        except Unlike:
            continue


def _lines(runs: list[_Run], document: dict[str, Any], judged: dict[int, list[str]]) -> list[list[str]]:
    """Each gate's lines: `judged` by its twin, or by its program in one jq pass."""
    rest = [run for i, run in enumerate(runs) if i not in judged]
    by_jq = iter(run_programs(rest, jq_input(document)) if rest else [])
    return [judged[i] if i in judged else next(by_jq) for i in range(len(runs))]


def _from_slices(
    plan: Plan, state: WaveState, snapshot: Snapshot
) -> tuple[list[dict[str, Any]] | None, _SelectorMatches | None]:
    """The ResourceSlices as the programs read them, and the tiers' and bridges' selector matches."""
    return _read("resourceslices", snapshot), _selector_matches(plan, state, snapshot)


def evaluate_gates(gates: list[Gate], plan: Plan, state: WaveState, snapshot: Snapshot) -> list[GateResult]:
    """Gates (or evidence checks) against a snapshot: by their Python twins (`evidence/twins/`), and
    the programs of those a twin leaves to jq in one jq pass.

    With the inventory gate, a forked child (`Background`) reads the ResourceSlices, sums their
    devices up and counts the tiers' and bridges' selector matches, while the parent reads the
    other kinds and judges the gates that do not read slices; the result, and any error, are those
    of a plain call.
    """
    facts = wave_data(plan, state, validation_jobs(plan, state).data)
    runs = [(g.id, g.kinds, gate_data(g, facts)) for g in gates]
    kinds = {kind for g in gates for kind in g.kinds}
    judged: dict[int, list[str]] = {}
    if not any(g.id == "inventory" for g in gates):
        document = _document(kinds, snapshot)
        _by_twins(runs, document, _pools(runs, document), judged)
        return _judged(gates, plan, state, snapshot, _lines(runs, document, judged), None)
    with Background(partial(_from_slices, plan, state, snapshot)) as child:
        document = _document(kinds - {"resourceslices"}, snapshot)
        pools = _pools(runs, document)
        _by_twins(runs, document, pools, judged)
        slices, matches = child.result()
    if "resourceslices" in kinds:
        document["resourceslices"] = slices
    _by_twins(runs, document, pools, judged)
    return _judged(gates, plan, state, snapshot, _lines(runs, document, judged), matches)


def _judged(
    gates: list[Gate],
    plan: Plan,
    state: WaveState,
    snapshot: Snapshot,
    outputs: list[list[str]],
    matches: _SelectorMatches | None,
) -> list[GateResult]:
    jobs = gate_job_names(plan, state) if any(g.id in _RECORDING for g in gates) else {}
    results = []
    for gate, lines in zip(gates, outputs, strict=True):
        result = judge(GateResult(gate.id, gate.title), lines)
        if gate.id == "inventory":
            _selectors(matches, result)
        if gate.id in _RECORDING:
            _recorded(plan, snapshot, result, jobs)
        results.append(result)
    return results


def evaluate_gate(gate: Gate, plan: Plan, state: WaveState, snapshot: Snapshot) -> GateResult:
    """One gate (or evidence check) against a snapshot."""
    return evaluate_gates([gate], plan, state, snapshot)[0]


def extra_checks(plan: Plan, state: WaveState, snapshot: Snapshot) -> list[GateResult]:
    """Evidence that has no in-cluster Job: claims on allowed nodes, cleanup, phantom nodes."""
    return evaluate_gates(evidence_checks(plan, state), plan, state, snapshot)


def evaluate_wave(plan: Plan, state: WaveState, snapshot: Snapshot) -> list[GateResult]:
    """Every gate of the wave and the evidence-only checks, in report order."""
    return evaluate_gates(
        [*gates_for_wave(plan, state), *evidence_checks(plan, state)], plan, state, snapshot
    )
