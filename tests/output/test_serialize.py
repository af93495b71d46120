"""Serialisation: validated once per distinct object, wave label restored, invalid objects named."""

from __future__ import annotations

import json

import pytest

from gpuplatform.output.serialize import LOCK_FILE, RenderedOutputInvalid, Serializer, lock_document
from gpuplatform.render.meta import k8s_object
from gpuplatform.render.tree import Tree


def test_objects_differing_only_in_wave_are_dumped_once() -> None:
    serializer = Serializer("1.36")
    a = k8s_object("v1", "Node", "gpu-01", wave="one", labels={"x": "y"})
    b = k8s_object("v1", "Node", "gpu-01", wave="two", labels={"x": "y"})
    text_a, _ = serializer.dump(a)
    text_b, _ = serializer.dump(b)
    assert len(serializer._texts) == 1
    assert "gpuplatform.dev/wave: one" in text_a and "gpuplatform.dev/wave: two" in text_b
    assert text_a.replace("one", "two") == text_b


def test_invalid_objects_stop_with_the_file_and_object_named() -> None:
    tree = Tree("lab")
    bad = k8s_object("resource.k8s.io/v1", "DeviceClass", "x", wave="w", spec={"selectorz": []})
    tree.files["waves/00-w/20-device-classes/deviceclass_x.yaml"] = [bad]
    with pytest.raises(RenderedOutputInvalid) as exc:
        Serializer("1.36").files(tree)
    assert exc.value.lines == [
        "lab/waves/00-w/20-device-classes/deviceclass_x.yaml: DeviceClass/x: "
        "spec: Additional properties are not allowed ('selectorz' was unexpected)"
    ]


def test_unknown_kinds_fail_closed() -> None:
    tree = Tree("lab")
    tree.files["x.yaml"] = [k8s_object("example.com/v1", "Widget", "w", wave="w")]
    with pytest.raises(RenderedOutputInvalid, match=r"no schema for Widget example\.com/v1"):
        Serializer("1.36").files(tree)


def test_lock_document_has_digests_and_no_timestamps() -> None:
    files = {"b.yaml": b"b", "a.yaml": b"a"}
    doc = json.loads(lock_document(files, platform="lab", spec={"x": 1}, origin={"activeWave": "w"}))
    assert list(doc["files"]) == ["a.yaml", "b.yaml"]
    assert doc["files"]["a.yaml"].startswith("sha256:")
    assert (
        doc["specDigest"]
        == lock_document(files, platform="lab", spec={"x": 1}, origin={})
        .decode()
        .split('"specDigest": "')[1]
        .split('"')[0]
    )
    assert LOCK_FILE == "gpuplatform.lock.json"


@pytest.mark.parametrize("name", ["gpu-01", "123", "1e3", "true", "null", "0x1f", "a.b.c", "2001-01-01"])
def test_templated_names_dump_exactly_like_the_object_itself(name: str) -> None:
    from gpuplatform.output.yaml import dump_yaml

    obj = k8s_object("v1", "Node", name, wave="w", labels={"x": "y"})
    serializer = Serializer("1.36")
    serializer.dump(k8s_object("v1", "Node", "other", wave="w", labels={"x": "y"}))
    text, errors = serializer.dump(obj)
    assert text == dump_yaml(obj)
    assert errors == []
    assert len(serializer._texts) == 1


def test_lock_document_is_the_indented_json_of_its_content() -> None:
    # GIVEN files with non-ASCII and quoted names, and none at all
    import json

    for files in ({"a/é.yaml": b"x", 'b/"q".yaml': b"y"}, {}):
        text = lock_document(files, platform="p", spec={"k": ["v"]}, origin={"overlays": [], "stack": "s.py"})
        # THEN it is byte for byte json.dumps(indent=2) of what it says
        assert text == (json.dumps(json.loads(text), indent=2) + "\n").encode()
        assert list(json.loads(text)["files"]) == sorted(files)
