"""Overlay merge semantics: mappings merge, named lists merge by name, additions are marked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpuplatform.errors import InputError
from gpuplatform.load.merge import Origin, merge_spec, parse_loc
from gpuplatform.load.stacks import load_stack
from tests.specs import minimal_spec, write_overlay, write_spec


def _merge(base: dict[str, Any], overlay: dict[str, Any]) -> tuple[dict[str, Any], Origin]:
    return merge_spec(base, overlay, Origin("stack.yaml"), "overlay.yaml")


def _refused(base: dict[str, Any], overlay: dict[str, Any]) -> list[str]:
    with pytest.raises(InputError) as caught:
        _merge(base, overlay)
    return [p.line() for p in caught.value.problems]


def test_mappings_merge_recursively_and_inputs_are_untouched() -> None:
    base = {"a": {"b": 1, "c": 2}, "d": 3}
    overlay = {"a": {"c": 20, "e": 5}}
    assert _merge(base, overlay)[0] == {"a": {"b": 1, "c": 20, "e": 5}, "d": 3}
    assert base == {"a": {"b": 1, "c": 2}, "d": 3}
    assert overlay == {"a": {"c": 20, "e": 5}}


def test_named_lists_merge_by_name_and_marked_additions_are_appended() -> None:
    base = {"pools": [{"name": "a", "nodes": ["n1"]}, {"name": "b", "nodes": ["n2"]}]}
    overlay = {"pools": [{"name": "b", "nodes": ["x2"]}, {"name": "c", "nodes": ["n3"], "$add": True}]}
    assert _merge(base, overlay)[0]["pools"] == [
        {"name": "a", "nodes": ["n1"]},
        {"name": "b", "nodes": ["x2"]},
        {"name": "c", "nodes": ["n3"]},
    ]


def test_an_item_that_names_nothing_in_the_base_is_refused_at_the_overlays_own_index() -> None:
    # GIVEN an overlay meant to change wave "pilot" that misspells it
    base = {"spec": {"waves": [{"name": "base"}, {"name": "pilot"}, {"name": "cutover"}]}}
    overlay = {"spec": {"waves": [{"name": "pilott", "stage": "pilot-pool"}]}}
    # THEN it is refused, not appended after the cutover
    assert _refused(base, overlay) == [
        "error: overlay.yaml:spec.waves[0].name: 'pilott' names nothing in the base's spec.waves "
        "(names: base, pilot, cutover); mark the item `$add: true` to add it"
    ]


def test_a_list_the_base_lacks_needs_its_items_marked_too() -> None:
    assert _refused({"spec": {}}, {"spec": {"nimServices": [{"name": "x"}]}}) == [
        "error: overlay.yaml:spec.nimServices[0].name: 'x' names nothing in the base's spec.nimServices "
        "(names: none); mark the item `$add: true` to add it"
    ]
    merged, _ = _merge({"spec": {}}, {"spec": {"nimServices": [{"name": "x", "$add": True}]}})
    assert merged == {"spec": {"nimServices": [{"name": "x"}]}}


def test_the_marker_must_be_true_and_only_on_new_items_of_named_lists() -> None:
    base = {"waves": [{"name": "a"}], "engines": ["argocd"]}
    assert _refused(base, {"waves": [{"name": "a", "$add": True}]}) == [
        "error: overlay.yaml:waves[0].name: 'a' is already in the base's waves: drop $add to change it"
    ]
    assert _refused(base, {"waves": [{"name": "b", "$add": "yes"}]}) == [
        "error: overlay.yaml:waves[0].$add: must be true (found 'yes')"
    ]
    assert _refused(base, {"engines": [{"$add": True}]}) == [
        "error: overlay.yaml:engines[0].$add: only items of a list merged by name take $add"
    ]


def test_every_problem_of_an_overlay_is_reported() -> None:
    base = {"a": [{"name": "x"}], "b": [{"name": "y"}]}
    assert len(_refused(base, {"a": [{"name": "p"}], "b": [{"name": "q"}]})) == 2


def test_other_lists_and_scalars_replace() -> None:
    assert _merge({"engines": ["argocd"]}, {"engines": ["flux"]})[0] == {"engines": ["flux"]}
    assert _merge({"a": {"b": 1}}, {"a": None})[0] == {"a": None}


def test_origin_points_at_the_file_and_index_that_wrote_a_field() -> None:
    # GIVEN a base with three waves and an overlay that changes the second and adds one
    base = {"spec": {"waves": [{"name": "a", "stage": "x"}, {"name": "b", "stage": "y"}, {"name": "c"}]}}
    overlay = {"spec": {"waves": [{"name": "d", "stage": "z", "$add": True}, {"name": "b", "stage": "w"}]}}
    _, origin = _merge(base, overlay)
    # THEN the merged index is translated to the overlay's own index, fields the overlay did not
    # write stay with the stack, and everything inside an added item is the overlay's
    assert origin.locate(parse_loc("spec.waves[1].stage")) == (
        "overlay.yaml",
        parse_loc("spec.waves[1].stage"),
    )
    assert origin.locate(parse_loc("spec.waves[3].stage")) == (
        "overlay.yaml",
        parse_loc("spec.waves[0].stage"),
    )
    assert origin.locate(parse_loc("spec.waves[3].tiers")) == (
        "overlay.yaml",
        parse_loc("spec.waves[0].tiers"),
    )
    assert origin.locate(parse_loc("spec.waves[2].stage")) == ("stack.yaml", parse_loc("spec.waves[2].stage"))
    assert origin.locate(parse_loc("spec.waves[0]")) == ("stack.yaml", parse_loc("spec.waves[0]"))


def test_origin_through_two_overlays() -> None:
    base = {"spec": {"pools": [{"name": "a"}], "activeWave": "x"}}
    one, origin = merge_spec(
        base, {"spec": {"pools": [{"name": "b", "$add": True}]}}, Origin("s.yaml"), "1.yaml"
    )
    _, origin = merge_spec(one, {"spec": {"activeWave": "y"}}, origin, "2.yaml")
    assert origin.locate(parse_loc("spec.activeWave")) == ("2.yaml", parse_loc("spec.activeWave"))
    assert origin.locate(parse_loc("spec.pools[1].nodes")) == ("1.yaml", parse_loc("spec.pools[0].nodes"))
    assert origin.locate(parse_loc("spec.pools[0].nodes")) == ("s.yaml", parse_loc("spec.pools[0].nodes"))


def test_parse_loc_reverses_format_loc() -> None:
    assert parse_loc("spec.nodePools[1].nodes[0]") == ("spec", "nodePools", 1, "nodes", 0)
    assert parse_loc('spec.draDriver.values.nodeSelector["nvidia.com/x"]') == (
        "spec",
        "draDriver",
        "values",
        "nodeSelector",
        "nvidia.com/x",
    )
    assert parse_loc("spec.kubernetes.featureGates.DRAExtendedResource") == (
        "spec",
        "kubernetes",
        "featureGates",
        "DRAExtendedResource",
    )


@pytest.mark.parametrize("field", ["nodePools", "tiers", "delivery", "activeWave"])
def test_a_null_the_overlay_writes_is_blamed_on_the_overlay(tmp_path: Path, field: str) -> None:
    # GIVEN an overlay that sets a field of the base to null
    spec = write_spec(tmp_path / "lab.yaml", minimal_spec())
    overlay = write_overlay(tmp_path / "staging.yaml", {field: None})
    # WHEN it is merged / THEN the error names the overlay, not the base that wrote a valid value
    with pytest.raises(InputError) as exc:
        load_stack(spec, overlays=[overlay])
    blamed = [(p.file, p.loc) for p in exc.value.problems]
    assert (str(overlay), f"spec.{field}") in blamed and (str(spec), f"spec.{field}") not in blamed


def test_a_null_list_is_refused_with_what_an_overlay_does_instead() -> None:
    # issue 39 (low): `nodePools: null` said "Input should be a valid tuple"
    base = minimal_spec()["spec"]
    [line] = _refused(base, {"nodePools": None})
    assert line.startswith(
        "error: overlay.yaml:nodePools: is null, not a list: an overlay changes a list item by item"
    )
    # an empty base list, or a mapping, is replaced as before
    assert _merge({"tiers": []}, {"tiers": None})[0] == {"tiers": None}
    assert _merge({"kueue": {"a": 1}}, {"kueue": None})[0] == {"kueue": None}


def test_an_item_marked_remove_drops_the_base_item_and_errors_still_find_their_file() -> None:
    # GIVEN a staging overlay without the production workload (#38 item 9) that changes a later one
    base = {
        "spec": {"workloads": [{"name": "vllm", "gpus": 8}, {"name": "train", "gpus": 1}, {"name": "nb"}]}
    }
    overlay = {"spec": {"workloads": [{"name": "vllm", "$remove": True}, {"name": "nb", "gpus": 2}]}}
    merged, origin = _merge(base, overlay)
    # THEN the workload is gone, and each remaining field is blamed on the file and index that wrote it
    assert merged["spec"]["workloads"] == [{"name": "train", "gpus": 1}, {"name": "nb", "gpus": 2}]
    assert origin.locate(parse_loc("spec.workloads[0].gpus")) == (
        "stack.yaml",
        parse_loc("spec.workloads[1].gpus"),
    )
    assert origin.locate(parse_loc("spec.workloads[1].gpus")) == (
        "overlay.yaml",
        parse_loc("spec.workloads[1].gpus"),
    )
    assert origin.locate(parse_loc("spec.workloads[1].kind")) == (
        "stack.yaml",
        parse_loc("spec.workloads[2].kind"),
    )


def test_a_removal_says_only_what_it_removes() -> None:
    base = {"waves": [{"name": "a"}], "engines": ["argocd"]}
    assert _refused(base, {"waves": [{"name": "b", "$remove": True}]}) == [
        "error: overlay.yaml:waves[0].name: 'b' names nothing in the base's waves (names: a)"
    ]
    assert _refused(base, {"waves": [{"name": "a", "$remove": True, "stage": "x"}]}) == [
        "error: overlay.yaml:waves[0].$remove: an item marked $remove has only its name: it removes the "
        "base's item, it changes or adds nothing"
    ]
    assert _refused(base, {"waves": [{"name": "a", "$remove": "yes"}]}) == [
        "error: overlay.yaml:waves[0].$remove: must be true (found 'yes')"
    ]
    assert _refused(base, {"engines": [{"$remove": True}]}) == [
        "error: overlay.yaml:engines[0].$remove: only items of a list merged by name take $remove"
    ]


def test_a_staging_overlay_removes_a_workload_from_the_cli(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from gpuplatform.cli import main

    doc = minimal_spec()
    doc["spec"]["workloads"] = [
        {
            "kind": "Deployment",
            "namespace": "team-a",
            "name": "big",
            "gpus": 1,
            "tier": "full",
            "movesIn": "claims",
        }
    ]
    stack = write_spec(tmp_path / "lab.yaml", doc)
    gone = write_overlay(tmp_path / "staging.yaml", {"workloads": [{"name": "big", "$remove": True}]})
    (loaded,) = load_stack(stack, [gone])
    assert loaded.platform.workloads == ()
    typo = write_overlay(tmp_path / "typo.yaml", {"workloads": [{"name": "bgi", "$remove": True}]})
    result = CliRunner().invoke(main, ["check", str(stack), "--overlay", str(typo)])
    assert result.exit_code == 2
    assert f"error: {typo}:spec.workloads[0].name: 'bgi' names nothing" in result.stderr
