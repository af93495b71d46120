"""Stacks and overlays: Python and YAML, declared overlays, and located errors for bad input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpuplatform.errors import InputError
from gpuplatform.load.stacks import discover_stacks, load_stack, load_stacks
from tests.conftest import REPO
from tests.specs import minimal_spec, write_overlay, write_spec


def _lines(exc: pytest.ExceptionInfo[InputError]) -> list[str]:
    return [p.line() for p in exc.value.problems]


def test_reference_stack_yields_its_platform_and_declared_staging_overlay() -> None:
    loaded = load_stack(REPO / "stacks" / "reference.py")
    assert [lp.platform.name for lp in loaded] == ["reference", "reference-staging"]
    staging = loaded[1]
    assert staging.platform.node_pools[0].nodes == ("stg-gpu-legacy-01",)
    assert staging.platform.node_pools[0].product == "H100-80GB"
    assert staging.platform.active_wave == "driver-validation"
    assert staging.overlays[0].endswith("reference-staging.yaml")


def test_yaml_spec_and_explicit_overlay(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "lab.yaml", minimal_spec())
    overlay = write_spec(
        tmp_path / "prod.yaml",
        {
            "apiVersion": "gpuplatform.dev/v1alpha1",
            "kind": "PlatformOverlay",
            "metadata": {"name": "lab-prod"},
            "spec": {"nodePools": [{"name": "new", "nodes": ["prod-gpu-02"]}], "activeWave": "claims"},
        },
    )
    [lp] = load_stack(spec, [overlay])
    assert lp.platform.name == "lab-prod"
    assert lp.platform.node_pools[1].nodes == ("prod-gpu-02",)
    assert lp.platform.node_pools[1].migrates_in == "pilot"
    assert lp.document["metadata"]["name"] == "lab-prod"


def test_a_stack_and_its_overlays_may_be_named_by_strings(tmp_path: Path) -> None:
    """`gpuplatform.load_stack("stacks/lab.yaml")` from Python: a path as text, as the CLI gives it."""
    spec = write_spec(tmp_path / "lab.yaml", minimal_spec())
    overlay = write_overlay(tmp_path / "prod.yaml", {"activeWave": "claims"})
    [plain] = load_stack(str(spec))
    [lp] = load_stack(str(spec), [str(overlay)])
    assert (plain.platform.active_wave, lp.platform.active_wave) == ("pilot", "claims")
    assert lp.source == str(spec) and lp.overlays == (str(overlay),)
    assert [x.platform.name for x in load_stacks([str(spec)])] == [plain.platform.name]


def test_every_problem_is_reported_with_file_and_field_path(tmp_path: Path) -> None:
    doc = minimal_spec()
    doc["spec"]["nodePools"][1]["gpusPerNode"] = "eight"
    doc["spec"]["nodePools"][0]["colour"] = "red"
    doc["spec"]["tenants"][0]["name"] = "Team_A"
    path = write_spec(tmp_path / "lab.yaml", doc)
    with pytest.raises(InputError) as exc:
        load_stack(path)
    assert _lines(exc) == [
        f"error: {path}:spec.nodePools[0].colour: unknown field",
        f"error: {path}:spec.nodePools[1].gpusPerNode: Input should be a valid integer",
        f"error: {path}:spec.tenants[0].name: 'Team_A' is not a DNS label (lower case letters, digits and '-', at most 63)",
    ]


def test_errors_introduced_by_an_overlay_name_the_overlay(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "lab.yaml", minimal_spec())
    overlay = write_spec(
        tmp_path / "bad.yaml",
        {
            "apiVersion": "gpuplatform.dev/v1alpha1",
            "kind": "PlatformOverlay",
            "spec": {"activeWave": "later"},
        },
    )
    with pytest.raises(InputError) as exc:
        load_stack(spec, [overlay])
    assert _lines(exc) == [
        f"error: {overlay}:spec.activeWave: wave 'later' is not defined in spec.waves "
        "(defined: base, pilot, claims, cutover)"
    ]


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ([1, 2], "expected a Platform document (a mapping), found list"),
        (
            {"apiVersion": "v1", "kind": "Platform", "metadata": {"name": "x"}, "spec": {}},
            "apiVersion: must be",
        ),
        (
            {"apiVersion": "gpuplatform.dev/v1alpha1", "kind": "Platform", "spec": {}},
            "metadata: must be a mapping",
        ),
    ],
)
def test_envelope_errors(tmp_path: Path, doc: object, expected: str) -> None:
    path = write_spec(tmp_path / "s.yaml", doc)
    with pytest.raises(InputError) as exc:
        load_stack(path)
    assert expected in "\n".join(_lines(exc))


def test_python_stack_that_raises_names_file_and_line(tmp_path: Path) -> None:
    stack = tmp_path / "broken.py"
    stack.write_text(
        "from gpuplatform.model import Platform\n\nx = 1\nraise RuntimeError('no cluster today')\n"
    )
    with pytest.raises(InputError) as exc:
        load_stack(stack)
    assert _lines(exc) == [f"error: {stack}:line 4: the stack raised RuntimeError: no cluster today"]


def test_python_stack_with_invalid_model_names_the_model_field(tmp_path: Path) -> None:
    stack = tmp_path / "bad.py"
    stack.write_text(
        "from gpuplatform.model import NodePool\n\nNodePool(name='p', nodes=['n'], product='x', gpus_per_node=0)\n"
    )
    with pytest.raises(InputError) as exc:
        load_stack(stack)
    assert _lines(exc) == [
        f"error: {stack}:line 3: NodePool.gpus_per_node: Input should be greater than or equal to 1"
    ]


def test_python_stack_without_a_platform(tmp_path: Path) -> None:
    stack = tmp_path / "empty.py"
    stack.write_text("x = 1\n")
    with pytest.raises(InputError, match="must expose `platform`, `platforms` or `build\\(\\)`"):
        load_stack(stack)


def test_python_stack_build_may_return_several_platforms(tmp_path: Path) -> None:
    stack = tmp_path / "fleet.py"
    stack.write_text(
        "from gpuplatform.load.documents import platform_from_document\n"
        "from tests.specs import minimal_spec\n\n"
        "def build():\n"
        "    docs = [minimal_spec(), minimal_spec()]\n"
        "    docs[1]['metadata']['name'] = 'lab-east'\n"
        "    return [platform_from_document(d, 'inline') for d in docs]\n"
    )
    assert [lp.platform.name for lp in load_stack(stack)] == ["lab", "lab-east"]


def test_two_stacks_defining_the_same_platform_are_refused(tmp_path: Path) -> None:
    a = write_spec(tmp_path / "a.yaml", minimal_spec())
    b = write_spec(tmp_path / "b.yaml", minimal_spec())
    with pytest.raises(InputError, match="platform 'lab' is defined twice"):
        load_stacks([a, b])


def test_discover_stacks_skips_private_files(tmp_path: Path) -> None:
    for name in ("b.yaml", "a.py", "_helpers.py", "notes.md"):
        (tmp_path / name).write_text("")
    assert [p.name for p in discover_stacks(tmp_path)] == ["a.py", "b.yaml"]


def _overlay(tmp_path: Path, spec: dict[str, Any], name: str = "staging.yaml") -> Path:
    return write_overlay(tmp_path / name, spec)


def test_an_overlay_item_that_names_no_base_wave_is_refused_not_appended(tmp_path: Path) -> None:
    # GIVEN a staging overlay meant to pin the pilot wave that misspells it and makes it active
    spec = write_spec(tmp_path / "lab.yaml", minimal_spec())
    overlay = _overlay(
        tmp_path, {"waves": [{"name": "pilot-pin", "stage": "pilot-pool"}], "activeWave": "pilot-pin"}
    )
    # WHEN loaded THEN it is refused at the overlay's own index (before: an eleventh wave after
    # the final cutover, every pool on DRA, active, exit 0)
    with pytest.raises(InputError) as exc:
        load_stack(spec, [overlay])
    assert _lines(exc) == [
        f"error: {overlay}:spec.waves[0].name: 'pilot-pin' names nothing in the base's spec.waves "
        "(names: base, pilot, claims, cutover); mark the item `$add: true` to add it"
    ]


def test_a_marked_addition_is_appended_and_validated_in_place(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "lab.yaml", minimal_spec())
    overlay = _overlay(
        tmp_path,
        {"nodePools": [{"name": "extra", "nodes": ["gpu-09"], "product": "H100-80GB", "$add": True}]},
    )
    [lp] = load_stack(spec, [overlay])
    assert [p.name for p in lp.platform.node_pools] == ["old", "new", "extra"]
    # a marked addition after the final cutover still breaks the stage order, at the overlay's index
    late = _overlay(tmp_path, {"waves": [{"name": "late", "stage": "scale", "$add": True}]}, "late.yaml")
    with pytest.raises(InputError) as exc:
        load_stack(spec, [late])
    assert _lines(exc) == [
        f"error: {spec}:spec.waves[3].stage: final-cutover must be the last wave ('late' comes after it)",
        f"error: {late}:spec.waves[0].stage: stage scale comes after final-cutover (wave 'cutover', "
        "spec.waves[3]): stages run in the order baseline, pilot-pool, driver-validation, native-claim-pilot, "
        "compatibility-bridge, application, nim-non-production, scale, final-cutover, drain between any two",
    ]


def test_validation_errors_of_an_overlay_item_use_the_overlays_index(tmp_path: Path) -> None:
    # GIVEN an overlay whose only wave item changes the base's fourth wave (merged index 3)
    spec = write_spec(tmp_path / "lab.yaml", minimal_spec())
    overlay = _overlay(tmp_path, {"waves": [{"name": "cutover", "stage": "cut-over"}]})
    with pytest.raises(InputError) as exc:
        load_stack(spec, [overlay])
    (line,) = _lines(exc)
    assert line.startswith(f"error: {overlay}:spec.waves[0].stage: Input should be ")


def test_policy_findings_caused_by_an_overlay_point_at_the_overlay(tmp_path: Path) -> None:
    from gpuplatform.policy.rules import run_rules

    # GIVEN an overlay that makes the second pool migrate in the claims wave (GP131: before validation)
    spec = write_spec(tmp_path / "lab.yaml", minimal_spec())
    overlay = _overlay(tmp_path, {"nodePools": [{"name": "new", "migratesIn": "claims"}]})
    [lp] = load_stack(spec, [overlay])
    found = [p for p in run_rules(lp) if p.code == "GP131"]
    assert [(p.file, p.loc) for p in found] == [(str(overlay), "spec.nodePools[0].migratesIn")]


def test_an_empty_stacks_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no stack in this folder"):
        discover_stacks(tmp_path)
