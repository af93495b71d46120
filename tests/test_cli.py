"""The CLI end to end: every exit code, error lines on stderr, nothing written on bad input."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from gpuplatform.cli import main
from gpuplatform.commands.synth import render_all
from gpuplatform.load.stacks import load_stack
from tests.conftest import REPO
from tests.specs import minimal_spec, write_overlay, write_spec


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def test_synth_writes_every_platform_of_a_stack(tmp_path: Path) -> None:
    result = run("synth", str(REPO / "stacks" / "reference.py"), "--out", str(tmp_path))
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"wrote {tmp_path}/reference",
        f"wrote {tmp_path}/reference-staging",
    ]
    assert (tmp_path / "reference" / "gpuplatform.lock.json").is_file()
    assert (tmp_path / "reference" / "nodes" / "dra-pilot" / "dra" / "node_gpu-dra-01.yaml").is_file()


def test_synth_check_detects_drift_and_passes_when_current(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "lab.yaml", minimal_spec())
    out = tmp_path / "out"
    assert run("synth", str(spec), "--out", str(out)).exit_code == 0
    assert run("synth", str(spec), "--out", str(out), "--check").exit_code == 0
    node = out / "lab" / "nodes" / "new" / "dra" / "node_gpu-02.yaml"
    node.write_text(node.read_text() + "# hand edit\n")
    (out / "lab" / "stray.yaml").write_text("x: 1\n")
    result = run("synth", str(spec), "--out", str(out), "--check")
    assert result.exit_code == 1
    assert f"changed: {node}" in result.stderr
    assert f"extra: {out / 'lab' / 'stray.yaml'}" in result.stderr
    assert "is stale: 2 file(s) differ" in result.stderr


def test_synth_without_stack_renders_stacks_folder_and_prunes_gone_platforms(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "stacks").mkdir()
    write_spec(tmp_path / "stacks" / "lab.yaml", minimal_spec())
    monkeypatch.chdir(tmp_path)
    assert run("synth").exit_code == 0
    assert (tmp_path / "dist" / "lab" / "gpuplatform.lock.json").is_file()
    (tmp_path / "stacks" / "lab.yaml").rename(tmp_path / "stacks" / "_off.yaml")
    other = minimal_spec()
    other["metadata"]["name"] = "lab2"
    write_spec(tmp_path / "stacks" / "lab2.yaml", other)
    assert run("synth", "--check").exit_code == 1
    assert run("synth").exit_code == 0
    assert sorted(p.name for p in (tmp_path / "dist").iterdir() if not p.name.startswith(".")) == ["lab2"]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "{path}: no such file"),
        ("a: [1\n", "{path}:line 2 column 1: YAML error:"),
        ("- 1\n- 2\n", "{path}: expected a Platform document (a mapping), found list"),
        ("unknown", "{path}: expected a Platform document (a mapping), found str"),
    ],
)
def test_bad_files_exit_2_with_one_error_line_and_write_nothing(
    tmp_path: Path, content: str | None, expected: str
) -> None:
    path = tmp_path / "spec.yaml"
    if content is not None:
        path.write_text(content)
    out = tmp_path / "out"
    result = run("synth", str(path), "--out", str(out))
    assert result.exit_code == 2
    assert result.stderr.startswith("error: " + expected.format(path=path))
    assert "Traceback" not in result.stderr
    assert not out.exists()


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda s: s["nodePools"][0].update(colour="red"), "spec.nodePools[0].colour: unknown field"),
        (
            lambda s: s["nodePools"][0].update(gpusPerNode="x"),
            "spec.nodePools[0].gpusPerNode: Input should be a valid integer",
        ),
        (
            lambda s: s["tenants"][0].update(namespace="Bad_NS"),
            "spec.tenants[0].namespace: 'Bad_NS' is not a DNS label",
        ),
        (lambda s: s.update(activeWave="nope"), "spec.activeWave: wave 'nope' is not defined in spec.waves"),
        (
            lambda s: s["waves"][0].update(tiers=["gold"]),
            "spec.waves[0].tiers[0]: tier 'gold' is not defined in spec.tiers",
        ),
    ],
)
def test_schema_and_reference_errors_exit_2(tmp_path: Path, mutate: object, expected: str) -> None:
    doc = minimal_spec()
    assert callable(mutate)
    mutate(doc["spec"])
    path = write_spec(tmp_path / "spec.yaml", doc)
    result = run("synth", str(path), "--out", str(tmp_path / "out"))
    assert result.exit_code == 2
    assert f"error: {path}:{expected}" in result.stderr
    assert not (tmp_path / "out").exists()


def test_python_stack_that_raises_exits_2_with_file_and_line(tmp_path: Path) -> None:
    stack = tmp_path / "boom.py"
    stack.write_text("raise ValueError('bad day')\n")
    result = run("synth", str(stack), "--out", str(tmp_path / "out"))
    assert result.exit_code == 2
    assert result.stderr.strip() == f"error: {stack}:line 1: the stack raised ValueError: bad day"


def test_refuses_to_replace_a_folder_it_did_not_create(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "lab.yaml", minimal_spec())
    (tmp_path / "out" / "lab").mkdir(parents=True)
    result = run("synth", str(spec), "--out", str(tmp_path / "out"))
    assert result.exit_code == 2
    assert "gpuplatform did not create it and will not replace it" in result.stderr


def test_internal_errors_exit_70_and_show_a_traceback_only_with_debug(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = write_spec(tmp_path / "lab.yaml", minimal_spec())

    def broken(*args: object, **kwargs: object) -> None:
        raise KeyError("renderer bug")

    monkeypatch.setattr("gpuplatform.commands.synth.render_tree", broken)
    result = run("synth", str(spec), "--out", str(tmp_path / "out"))
    assert result.exit_code == 70
    assert result.stderr.strip() == "error: internal: KeyError: 'renderer bug'"
    debug = run("--debug", "synth", str(spec), "--out", str(tmp_path / "out"))
    assert debug.exit_code == 70 and "Traceback" in debug.stderr


def test_schema_prints_the_spec_json_schema() -> None:
    result = run("schema")
    assert result.exit_code == 0
    schema = json.loads(result.stdout)
    assert schema["properties"]["kind"] == {"const": "Platform"}
    assert "nodePools" in schema["properties"]["spec"]["properties"]
    assert "name" not in schema["properties"]["spec"]["properties"]


def test_plan_text_and_json() -> None:
    text = run("plan", str(REPO / "stacks" / "reference.py"))
    assert text.exit_code == 0
    assert "01-pilot-pool  [pilot-pool]" in text.stdout
    data = json.loads(run("plan", str(REPO / "stacks" / "reference.py"), "--format", "json").stdout)
    assert [p["platform"] for p in data] == ["reference", "reference-staging"]


def test_plan_mermaid_is_the_block_of_each_platforms_readme() -> None:
    # GIVEN the reference stack, two platforms
    stack = REPO / "stacks" / "reference.py"
    readmes = [files["README.md"].decode() for files in render_all(load_stack(stack)).values()]
    # WHEN the plan is printed as Mermaid
    result = run("plan", str(stack), "--format", "mermaid")
    # THEN it prints each platform's fenced block, exactly as synth writes it in README.md
    assert result.exit_code == 0
    blocks = [re.search(r"^```mermaid\n.*?^```\n", text, re.M | re.S) for text in readmes]
    assert result.stdout == "\n".join(b[0] for b in blocks if b)
    assert result.stdout.count("```mermaid") == 2


def test_plan_mermaid_of_one_transition_is_bad_input() -> None:
    stack = str(REPO / "stacks" / "reference.py")
    result = run("plan", stack, "--format", "mermaid", "--from", "pilot-pool", "--to", "driver-validation")
    assert result.exit_code == 2
    assert "mermaid draws every wave" in result.stderr


def test_overlay_without_stack_is_bad_input() -> None:
    result = run("synth", "--overlay", "x.yaml")
    assert result.exit_code == 2
    assert "an overlay needs a STACK" in result.stderr


def test_diff_between_waves_hides_the_wave_label_and_names_new_objects() -> None:
    result = run(
        "diff", str(REPO / "stacks" / "reference.py"), "--waves", "driver-validation", "native-claim-pilot"
    )
    assert result.exit_code == 1
    assert (
        "+++ b/reference/waves/03-native-claim-pilot/20-device-classes/deviceclass_nvidia-hopper-large-memory.platform.example.com.yaml"
        in result.stdout
    )
    assert "-    gpuplatform.dev/wave: driver-validation" not in result.stdout
    assert "node_gpu-dra-01.yaml" not in result.stdout


def test_diff_against_disk_shows_the_edit(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "lab.yaml", minimal_spec())
    out = tmp_path / "out"
    run("synth", str(spec), "--out", str(out))
    same = run("diff", str(spec), "--out", str(out))
    assert (same.exit_code, same.stdout) == (0, "")
    node = out / "lab" / "nodes" / "new" / "dra" / "node_gpu-02.yaml"
    node.write_text(node.read_text().replace("mode: dra", "mode: legacy"))
    result = run("diff", str(spec), "--out", str(out))
    assert result.exit_code == 1
    assert "-  " in result.stdout or "-    " in result.stdout
    assert "+    gpu-scheduling.lab.example.com/mode: dra" in result.stdout


def test_diff_of_an_unknown_wave_is_bad_input() -> None:
    result = run("diff", str(REPO / "stacks" / "reference.py"), "--waves", "pilot-pool", "nope")
    assert result.exit_code == 2
    assert "error: --waves: platform 'reference' has no wave 'nope'" in result.stderr


def test_an_empty_stacks_folder_is_refused_and_nothing_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "stacks").mkdir()
    monkeypatch.chdir(tmp_path)
    result = run("synth")
    assert result.exit_code == 2
    assert (
        result.stderr == "error: stacks: no stack in this folder (*.py, *.yaml, *.yml): nothing to render\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["stacks"]  # no dist/, no lock file


def test_an_overlay_that_appends_by_mistake_exits_2_at_its_own_path(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "lab.yaml", minimal_spec())
    overlay = write_overlay(
        tmp_path / "staging.yaml",
        {"waves": [{"name": "pilot-pin", "stage": "pilot-pool"}], "activeWave": "pilot-pin"},
    )
    out = tmp_path / "out"
    result = run("synth", str(spec), "--overlay", str(overlay), "--out", str(out))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {overlay}:spec.waves[0].name: 'pilot-pin' names nothing")
    assert not out.exists()


def test_synth_out_inside_a_git_work_tree_must_be_the_delivery_path(tmp_path: Path) -> None:
    # GIVEN a Git work tree with the spec, whose entry points name dist/
    (tmp_path / ".git").mkdir()
    spec = write_spec(tmp_path / "lab.yaml", minimal_spec())
    # WHEN written elsewhere in it THEN refused, naming both folders; nothing written
    result = run("synth", str(spec), "--out", str(tmp_path / "build"))
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: {spec}:spec.delivery.path: the tree is written to build/ of the Git work tree {tmp_path}, "
        "but the entry points would send Argo CD and Flux to dist/: set delivery.path: build (or write to dist/)\n"
    )
    assert not (tmp_path / "build").exists()
    # WHEN written where the entry points point THEN fine, and the Application names that path
    assert run("synth", str(spec), "--out", str(tmp_path / "dist")).exit_code == 0
    doc = minimal_spec()
    doc["spec"]["delivery"]["path"] = "deploy/gpu"
    write_spec(spec, doc)
    assert run("synth", str(spec), "--out", str(tmp_path / "deploy" / "gpu")).exit_code == 0
    app = (tmp_path / "deploy/gpu/lab/delivery/argocd/application_argocd_lab.yaml").read_text()
    assert "path: deploy/gpu/lab/waves/01-pilot/argocd" in app


def test_synth_out_outside_a_git_work_tree_notes_where_the_entry_points_point(tmp_path: Path) -> None:
    result = run(
        "synth", str(write_spec(tmp_path / "lab.yaml", minimal_spec())), "--out", str(tmp_path / "o")
    )
    assert result.exit_code == 0
    assert result.stderr.splitlines()[-1] == (
        f"info: {tmp_path / 'o'}: not inside a Git work tree: the entry points name dist/ in the delivery "
        "repository; commit the tree there"
    )


def test_flux_entry_refuses_a_platform_without_flux() -> None:
    result = run("flux-entry", str(REPO / "stacks" / "mixed-fleet.yaml"))
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        f"error: {REPO / 'stacks' / 'mixed-fleet.yaml'}:spec.delivery.engines: platform 'mixed-fleet' "
        "renders no Flux entry: add flux to the engines\n"
    )


def test_a_flux_older_than_the_minimum_is_refused(tmp_path: Path) -> None:
    doc = minimal_spec()
    doc["spec"]["delivery"]["fluxVersion"] = "2.2.3"
    spec = write_spec(tmp_path / "old-flux.yaml", doc)
    result = run("synth", str(spec), "--out", str(tmp_path / "dist"))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {spec}:spec.delivery.fluxVersion: ")
    assert "Flux 2.2.3 cannot apply helm.toolkit.fluxcd.io/v2: 2.3.0 or newer" in result.stderr


def test_a_flux_platform_on_a_branch_bootstrap_does_not_follow_is_refused(tmp_path: Path) -> None:
    # GIVEN a Flux platform on the staging branch that names no GitRepository of its own
    doc = minimal_spec()
    doc["spec"]["delivery"] |= {"engines": ["flux"], "revision": "staging"}
    spec = write_spec(tmp_path / "staging.yaml", doc)
    # WHEN it is rendered THEN it is refused where the branch is set (bootstrap's would ignore it)
    result = run("synth", str(spec), "--out", str(tmp_path / "dist"))
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr.startswith(f"error: {spec}:spec.delivery.revision: Flux would not follow 'staging'")
    assert "set spec.delivery.fluxGitRepository" in result.stderr
    # AND with its own GitRepository, or for Argo CD alone, it renders
    doc["spec"]["delivery"]["fluxGitRepository"] = "staging"
    assert run("synth", str(write_spec(spec, doc)), "--out", str(tmp_path / "own")).exit_code == 0
    doc["spec"]["delivery"]["engines"] = ["argocd"]
    del doc["spec"]["delivery"]["fluxGitRepository"]
    assert run("synth", str(write_spec(spec, doc)), "--out", str(tmp_path / "argo")).exit_code == 0


def test_flux_entry_prints_a_staging_platform_s_own_git_repository_before_its_entry() -> None:
    result = run("flux-entry", str(REPO / "stacks" / "reference.py"), "--platform", "reference-staging")
    assert result.exit_code == 0, result.stderr
    source, entry = yaml.safe_load_all(result.stdout)
    assert (source["kind"], source["metadata"]["name"]) == ("GitRepository", "reference-staging")
    assert source["spec"]["ref"] == {"branch": "staging"}
    assert entry["spec"]["sourceRef"] == {"kind": "GitRepository", "name": "reference-staging"}


def test_a_notification_service_that_makes_no_annotation_key_is_refused(tmp_path: Path) -> None:
    doc = minimal_spec()
    doc["spec"]["delivery"]["syncFailedNotifications"] = {"slack channel": "gpu-oncall"}
    spec = write_spec(tmp_path / "notify.yaml", doc)
    result = run("synth", str(spec), "--out", str(tmp_path / "dist"))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {spec}:spec.delivery.syncFailedNotifications")
    assert (
        "notifications.argoproj.io/subscribe.on-sync-failed.slack channel is not an annotation key"
        in result.stderr
    )
