"""One verdict: `check` and `synth` include the simulation (GP290), `--allow`, and the verdict cache."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from gpuplatform import background, runtime
from gpuplatform.cli import main
from gpuplatform.commands import verdicts
from gpuplatform.load.stacks import load_stack
from gpuplatform.render import operators
from gpuplatform.simulate import verdict
from tests.conftest import REPO
from tests.forks import count_forks
from tests.simulate.helpers import without_application_finalizer
from tests.specs import minimal_spec, write_spec

pytestmark = pytest.mark.usefixtures("cli_runtime")


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


@pytest.fixture
def unsafe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A spec only the simulation refuses: the DRA driver's child Application rendered without the
    resources finalizer, so Argo CD orphans the release when the rollback to the first wave removes
    the Application (no rule reads the finalizer; `simulate` reports `leftovers`)."""
    without_application_finalizer(monkeypatch)
    doc = minimal_spec()
    doc["spec"]["delivery"]["engines"] = ["argocd", "flux"]
    return write_spec(tmp_path / "lab.yaml", doc)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(runtime.CACHE_ENV, str(folder))
    return folder / "verdicts"


def test_check_refuses_what_simulate_proves_unsafe(tmp_path: Path, cache: Path, unsafe: Path) -> None:
    spec = str(unsafe)
    simulated = run("simulate", spec)
    checked = run("check", spec)
    assert simulated.exit_code == 1
    assert checked.exit_code == 1, checked.stderr
    assert "GP290 simulate proves pilot -> base unsafe (argocd)" in checked.stderr
    assert f"hint: gpuplatform simulate {spec} --from pilot --to base --engine argocd" in checked.stderr


def test_check_allows_gp290_as_a_warning_that_says_so(tmp_path: Path, cache: Path, unsafe: Path) -> None:
    result = run("check", str(unsafe), "--allow", "GP290")
    assert result.exit_code == 0, result.stderr
    assert (
        "warning:" in result.stderr
        and "(allowed with --allow GP290, recorded in the lock file)" in result.stderr
    )


def test_check_refuses_an_allow_code_no_rule_has(tmp_path: Path, cache: Path, unsafe: Path) -> None:
    result = run("check", str(unsafe), "--allow", "GP999")
    assert result.exit_code == 2
    assert "error: --allow: no rule GP999" in result.stderr


def test_synth_refuses_gp290_and_records_the_override(tmp_path: Path, cache: Path, unsafe: Path) -> None:
    spec = str(unsafe)
    refused = run("synth", spec, "--out", str(tmp_path / "out"))
    assert refused.exit_code == 1 and "GP290" in refused.stderr
    assert not (tmp_path / "out" / "lab").exists()
    allowed = run("synth", spec, "--out", str(tmp_path / "out"), "--allow", "GP290")
    assert allowed.exit_code == 0, allowed.stderr
    lock = json.loads((tmp_path / "out" / "lab" / "gpuplatform.lock.json").read_text())
    assert lock["overrides"] == ["GP290"]


def test_the_default_spec_is_clean_in_check_and_simulate(tmp_path: Path, cache: Path) -> None:
    # the operator outside gpuplatform (the default) gets its settings from the first wave's hand-off
    spec = str(write_spec(tmp_path / "lab.yaml", minimal_spec()))
    assert run("simulate", spec).exit_code == 0
    checked = run("check", spec)
    assert checked.exit_code == 0, checked.stderr
    assert "GP290" not in checked.stderr


def _replays(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The platforms whose transitions are replayed from now on (in this process or a child)."""
    replayed: list[str] = []
    real = verdict.simulation_verdicts

    def counting(loaded: Any, *args: Any) -> Any:
        replayed.extend(lp.platform.name for lp in loaded)
        return real(loaded, *args)

    monkeypatch.setattr(verdicts, "simulation_verdicts", counting)
    monkeypatch.setattr(background, "can_fork", lambda: False)  # count in this process
    return replayed


def test_a_verdict_is_reused_while_the_spec_is_unchanged(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch, unsafe: Path
) -> None:
    spec = unsafe
    replayed = _replays(monkeypatch)
    first = run("check", str(spec))
    second = run("check", str(spec))
    assert replayed == ["lab"], "the second check reads the cache"
    assert (first.exit_code, first.stderr) == (second.exit_code, second.stderr)
    # a changed spec is another key (Flux only: the unsafe Application is not rendered)
    doc = minimal_spec()
    doc["spec"]["delivery"]["engines"] = ["flux"]
    write_spec(spec, doc)
    assert run("check", str(spec)).exit_code == 0
    assert replayed == ["lab", "lab"]
    assert len(list(cache.glob("*.json"))) == 2


def test_a_cache_entry_that_cannot_be_verified_is_replayed(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch, unsafe: Path
) -> None:
    spec = unsafe
    replayed = _replays(monkeypatch)
    run("check", str(spec))
    [entry] = cache.glob("*.json")
    # GIVEN an entry claiming a clean verdict under another key, a truncated one, and a link
    forged = json.loads(entry.read_text())
    for content in (
        json.dumps({**forged, "key": "0" * 64, "refusals": []}),
        entry.read_text()[:20],
    ):
        entry.write_text(content)
        assert run("check", str(spec)).exit_code == 1
    clean = tmp_path / "clean.json"
    clean.write_text(json.dumps({**forged, "refusals": []}))
    entry.unlink()
    entry.symlink_to(clean)
    assert run("check", str(spec)).exit_code == 1
    assert replayed == ["lab"] * 4


def test_an_empty_cache_variable_turns_the_cache_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(runtime.CACHE_ENV, "")
    assert runtime.user_cache_folder() is None
    monkeypatch.delenv(runtime.CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert runtime.user_cache_folder() == tmp_path / "gpuplatform" / "verdicts"


def test_the_key_covers_the_sdk_version_and_the_spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (loaded,) = load_stack(write_spec(tmp_path / "lab.yaml", minimal_spec()))
    key = verdicts.verdict_key(loaded)
    monkeypatch.setattr(verdicts, "SDK_VERSION", "9.9.9")
    assert verdicts.verdict_key(loaded) != key


def test_a_cached_verdict_never_prints_another_invocations_path(
    tmp_path: Path, cache: Path, unsafe: Path
) -> None:
    # GIVEN the same spec checked from another folder first (its verdict cached)
    other = tmp_path / "someone-else" / "lab.yaml"
    other.parent.mkdir()
    other.write_text(unsafe.read_text())
    assert f"hint: gpuplatform simulate {other} " in run("check", str(other)).stderr
    # WHEN this one is checked
    checked = run("check", str(unsafe))
    # THEN its hints name its own path, never the other's
    assert f"hint: gpuplatform simulate {unsafe} --from pilot --to base" in checked.stderr
    assert str(other) not in checked.stderr


@pytest.mark.skipif(not background.can_fork(), reason="needs fork and two cores")
def test_check_replays_in_a_forked_child_only_when_the_cache_misses(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch, unsafe: Path
) -> None:
    spec = str(unsafe)
    forked = count_forks(monkeypatch)
    run("check", spec)
    cold = len(forked)
    run("check", spec)
    assert cold - (len(forked) - cold) == 1, "the warm check forks no child for the simulation"
    assert os.listdir(cache)


def test_check_of_a_stack_of_several_platforms_judges_each(tmp_path: Path, cache: Path) -> None:
    for _ in range(2):  # cold, then from the cache
        result = run("check", str(REPO / "stacks" / "reference.py"))
        assert result.exit_code == 0, result.stderr
        assert "platform reference-staging" in result.stdout


def test_a_violation_adopting_the_first_wave_names_no_transition(
    tmp_path: Path, cache: Path, unsafe: Path
) -> None:
    # GIVEN an operator whose DRA kubelet plugin would run on no GPU node at all
    doc = minimal_spec()
    doc["spec"]["draDriver"]["values"] = {"kubeletPlugin": {"nodeSelector": {"kubernetes.io/os": "windows"}}}
    doc["spec"]["gpuOperator"] = {"managed": True, "values": {"toolkit": {"enabled": False}}}
    spec = str(write_spec(tmp_path / "lab.yaml", doc))
    result = run("check", spec)
    assert result.exit_code == 1
    assert "GP290 simulate proves adopting base unsafe" in result.stderr
    assert f"hint: gpuplatform simulate {spec} --engine argocd\n" in result.stderr


def test_check_with_a_snapshot_replays_its_pods_and_caches_nothing(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a cluster whose unmigrated pod tolerates every taint, and the chart's class unpatched
    snapshot = tmp_path / "snap"
    snapshot.mkdir()
    nodes = [{"metadata": {"name": n, "labels": {}}} for n in ("gpu-01", "gpu-02")]
    (snapshot / "nodes.json").write_text(json.dumps({"kind": "List", "items": nodes}))
    trainer = {
        "metadata": {"name": "trainer", "namespace": "ml"},
        "spec": {
            "nodeName": "gpu-01",
            "tolerations": [{"operator": "Exists"}],
            "containers": [{"name": "main", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
        },
        "status": {"phase": "Running"},
    }
    (snapshot / "pods.json").write_text(json.dumps({"kind": "List", "items": [trainer]}))
    monkeypatch.setattr(operators, "chart_class_patches", lambda plan, state: [])
    doc = minimal_spec()
    doc["spec"]["gpuOperator"] = {"managed": True}
    spec = str(write_spec(tmp_path / "lab.yaml", doc))
    # WHEN check judges it with the snapshot
    result = run("check", spec, "--snapshot", str(snapshot))
    # THEN the replayed pod is the snapshot's, and the verdict, which depends on the cluster, is not kept
    assert result.exit_code == 1
    assert "invariant early-bridge at step" in result.stderr and ": unmigrated ml/trainer " in result.stderr
    assert not cache.exists() or not list(cache.iterdir())
