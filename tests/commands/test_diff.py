"""`diff --waves` and `plan --from/--to`: the real change of a transition, hand-offs included."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from gpuplatform.cli import main
from gpuplatform.commands.diff import loaded_wave_diffs, reviewed_transitions
from gpuplatform.commands.synth import render_files
from gpuplatform.commands.wave_diff import diff_waves
from gpuplatform.errors import InputError
from gpuplatform.load.stacks import LoadedPlatform, load_stack
from gpuplatform.plan.transitions import Transition, transition
from gpuplatform.plan.waves import plan_platform
from tests.conftest import REPO
from tests.specs import minimal_spec, write_spec

MIXED = str(REPO / "stacks" / "mixed-fleet.yaml")


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


@pytest.fixture(scope="module")
def mixed() -> LoadedPlatform:
    (loaded,) = load_stack(Path(MIXED))
    return loaded


def test_identical_gates_are_no_change_though_their_job_names_differ(mixed: LoadedPlatform) -> None:
    # GIVEN apps -> nim: only the NIM service moves; every gate Job is renamed (digest of the wave)
    files = render_files(mixed)
    plan = plan_platform(mixed.platform)
    a, b = plan.wave("apps"), plan.wave("nim")
    assert {
        p.rsplit("/", 1)[1] for p in files if p.startswith(f"waves/{a.dir_name}/50-gates/post/job_")
    }.isdisjoint(p.rsplit("/", 1)[1] for p in files if p.startswith(f"waves/{b.dir_name}/50-gates/post/job_"))
    # WHEN diffed
    changed = diff_waves(files, "mixed-fleet", a, b)
    # THEN the gates pair up and vanish; the NIM service's claim template and its hand-off remain
    assert not any("50-gates" in c.key for c in changed.changes)
    assert changed.units == {"40-tenants"}
    assert [c.describe() for c in changed.handoffs] == [
        "added NimServiceHandoff serving/llm-dra (nimservicehandoff_serving_llm-dra.yaml)"
    ]


def test_a_gate_whose_facts_change_is_one_pair_not_a_delete_and_an_add(mixed: LoadedPlatform) -> None:
    # GIVEN drain -> cutover: the cutover moves the A100 pool, so the gates' facts change
    (d,) = loaded_wave_diffs([mixed], "drain", "cutover")
    facts = [c for c in d.changes if c.key.startswith("50-gates/post/gate-facts:")]
    assert {c.key for c in facts} >= {
        "50-gates/post/gate-facts:allocator-exclusivity@gpuplatform-gates",
        "50-gates/post/gate-facts:inventory@gpuplatform-gates",
    }
    assert all(c.state == "changed" for c in facts)
    # the Jobs themselves do not change: they carry only the name of their facts and the program's
    assert not [c.key for c in d.changes if c.key.startswith("50-gates/post/gate:")]
    text = d.unified()
    # THEN the unified diff shows the real file names and only the changed fact
    assert (
        "--- a/mixed-fleet/waves/07-drain/50-gates/post/configmap_gpuplatform-gates_gate-inventory-" in text
    )
    assert (
        "+++ b/mixed-fleet/waves/08-cutover/50-gates/post/configmap_gpuplatform-gates_gate-inventory-" in text
    )
    assert '+      "inventory": {"a100": {"count": 8, "memory": {"describe": "40960Mi' in text
    assert '-      "inventory": {"h100": {"count": 8,' in text
    # the paired gates' digests are masked; the one gate that goes (no legacy node left) shows as it
    # is, Job and facts (so is the release Job: no DRA node is left to release)
    assert [c.key for c in d.changes if c.new is None] == [
        "15-allocator-switch/release/switch:release@gpuplatform-gates",
        "50-gates/pre/gate-facts:rollback-safety@gpuplatform-gates",
        "50-gates/pre/gate:rollback-safety@gpuplatform-gates",
    ]
    gone = next(c for c in d.changes if c.key.startswith("50-gates/pre/gate:"))
    assert f"-  name: {Path(gone.old_path or '').stem.split('_')[-1]}" in text
    assert text.count("-  name: gate-") == 2 and "+  name: gate-" not in text
    assert "name: switch-enable-" not in text  # identical content in both waves: no change


def test_handoffs_are_diffed_and_the_wave_is_masked(mixed: LoadedPlatform) -> None:
    (d,) = loaded_wave_diffs([mixed], "nim", "scale")
    text = d.unified()
    assert "+++ b/mixed-fleet/handoff/06-scale/nodepool_gpu-l40s.yaml" in text
    assert "+        nvidia.com/dra-kubelet-plugin: 'true'" in text
    assert "wave: nim" not in text and "wave: scale" not in text


def test_a_wave_name_the_dumper_quotes_is_masked_too(tmp_path: Path) -> None:
    # GIVEN waves named like a number and a YAML 1.1 boolean: the dumper writes them quoted
    doc = minimal_spec()
    text = json.dumps(doc).replace('"base"', '"123"').replace('"pilot"', '"y"')
    spec = write_spec(tmp_path / "lab.yaml", json.loads(text))
    (loaded,) = load_stack(spec)
    files = render_files(loaded)
    assert any(b"gpuplatform.dev/wave: '123'" in c for c in files.values())
    # WHEN the two waves are diffed
    (d,) = loaded_wave_diffs([loaded], "123", "y")
    # THEN the label is masked where the dumper quoted it: no line shows either name
    shown = d.unified()
    assert "gpuplatform.dev/wave: <wave>" in shown
    assert not re.search(r"^[-+].*('123'|'y'|: 123$|: y$)", shown, re.MULTILINE)


def test_a_drain_wave_marks_the_drained_pools_handoff(mixed: LoadedPlatform) -> None:
    (d,) = loaded_wave_diffs([mixed], "scale", "drain")
    # the hand-off says which pool drains; no node changes allocator; the quota no longer keeps
    # GPUs for the NIM service retired since (render/quota.py legacy_gpus)
    assert [c.key for c in d.handoffs] == ["handoff/nodepoolhandoff_a100.yaml"]
    assert "-  drain: false\n+  drain: true" in d.unified()
    assert d.units == {"40-tenants"}


def test_diff_exits_1_on_differences_and_0_without(tmp_path: Path) -> None:
    changed = run("diff", MIXED, "--waves", "apps", "nim")
    assert (changed.exit_code, changed.stdout.startswith("--- a/mixed-fleet/waves/04-apps/")) == (1, True)
    same = run("diff", MIXED, "--waves", "nim", "nim")
    assert (same.exit_code, same.stdout) == (0, "")


def test_unknown_waves_name_the_waves(mixed: LoadedPlatform) -> None:
    with pytest.raises(InputError) as caught:
        loaded_wave_diffs([mixed], "claim", "nim")
    (problem,) = caught.value.problems
    assert problem.file == "--waves"
    assert problem.message == (
        "platform 'mixed-fleet' has no wave 'claim' "
        "(waves: base, pilot, validate, claims, apps, nim, scale, drain, cutover)"
    )


def _units(t: Transition) -> list[str]:
    return [s.action for s in t.steps if s.kind == "sync"]


def test_plan_transition_omits_unchanged_units_and_lists_the_handoffs(mixed: LoadedPlatform) -> None:
    (t,) = reviewed_transitions([mixed], "apps", "nim")
    assert _units(t) == ["gates-pre", "40-tenants", "gates-post"]
    assert t.handoffs == ("added NimServiceHandoff serving/llm-dra (nimservicehandoff_serving_llm-dra.yaml)",)
    assert [s.kind for s in t.steps].count("merge") == 1  # the plan's own steps stay
    # a drain wave: the plan's sequence has no tenant step, the rendered quota changes: it is added
    (drain,) = reviewed_transitions([mixed], "scale", "drain")
    assert _units(drain) == ["gates-pre", "40-tenants", "gates-post"]
    assert "its rendered files change" in drain.text()
    assert "hand-offs (never synced: their owners apply them):" in drain.text()
    (stop,) = reviewed_transitions([mixed], "drain", "drain")
    assert "(nothing to do)" in stop.text()


def test_plan_transition_of_a_karpenter_pool_names_the_nodepool_patch(mixed: LoadedPlatform) -> None:
    (t,) = reviewed_transitions([mixed], "nim", "scale")
    raw = transition(plan_platform(mixed.platform), "nim", "scale")
    assert "changed NodePool gpu-l40s (nodepool_gpu-l40s.yaml)" in t.handoffs
    # a provisioner pool has no Node objects: the plan's node-label step changes no file and goes;
    # the allocator-switch Job runs on every transition, so its step stays
    assert "10-nodes" in _units(raw) and "10-nodes" not in _units(t)
    assert "enable" in _units(t)
    assert t.as_dict()["handoffs"] == list(t.handoffs)


def test_what_the_diff_shows_is_validated_strictly(
    mixed: LoadedPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gpuplatform.commands import diff
    from gpuplatform.output.serialize import RenderedOutputInvalid

    real = diff.render_wave

    def corrupt(tree, plan, state, layers):  # type: ignore[no-untyped-def]
        real(tree, plan, state, layers)
        for path, content in tree.files.items():
            if "/20-device-classes/deviceclass_" in path and isinstance(content, list):
                content[0]["spec"]["bogus"] = 1

    # GIVEN a renderer bug in a file the transition changes
    monkeypatch.setattr(diff, "render_wave", corrupt)
    # THEN the diff refuses, naming the object, as synth would
    with pytest.raises(RenderedOutputInvalid, match=r"DeviceClass/any-gpu\.fleet\.example\.com"):
        loaded_wave_diffs([mixed], "claims", "apps")
