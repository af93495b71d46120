"""Hostile input through the CLI: every outcome is exit 2 with `error:` lines and nothing written."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from gpuplatform.cli import main
from gpuplatform.load.yaml_input import MAX_FILE_BYTES
from tests.specs import minimal_spec, write_spec

Mutation = Callable[[dict[str, Any]], None]


def _synth(spec: Path, out: Path) -> Result:
    return CliRunner().invoke(main, ["synth", str(spec), "--out", str(out)])


def _assert_refused(result: Result, out: Path, *fragments: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: ")
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in result.stderr
    assert not out.exists(), "nothing may be written for bad input"


def _set(path: str, value: Any) -> Mutation:
    def mutate(doc: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = doc
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        node[int(last) if last.isdigit() else last] = value

    return mutate


ESCAPES = ["../evil", "/etc", "a\x00b", "a" * 300, "..", "a/b", "A"]


@pytest.mark.parametrize("name", ESCAPES, ids=repr)
@pytest.mark.parametrize(
    ("field", "loc"),
    [
        ("metadata.name", "metadata.name"),
        ("spec.waves.0.name", "spec.waves[0].name"),
        ("spec.tenants.0.namespace", "spec.tenants[0].namespace"),
        ("spec.tiers.0.name", "spec.tiers[0].name"),
        ("spec.nodePools.0.name", "spec.nodePools[0].name"),
    ],
)
def test_names_that_become_paths_cannot_escape_the_output(
    tmp_path: Path, field: str, loc: str, name: str
) -> None:
    # GIVEN a spec whose platform, wave, namespace, tier or pool name tries to leave dist/<platform>/
    doc = minimal_spec()
    _set(field, name)(doc)
    # WHEN it is synthesised / THEN it is refused at that field and nothing is written
    _assert_refused(
        _synth(write_spec(tmp_path / "lab.yaml", doc), tmp_path / "out"), tmp_path / "out", f":{loc}:"
    )


def test_an_overlay_cannot_rename_the_platform_out_of_the_tree(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "lab.yaml", minimal_spec())
    overlay = write_spec(
        tmp_path / "o.yaml",
        {
            "apiVersion": "gpuplatform.dev/v1alpha1",
            "kind": "PlatformOverlay",
            "metadata": {"name": "../../x"},
        },
    )
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["synth", str(spec), "--overlay", str(overlay), "--out", str(out)])
    _assert_refused(result, out, "metadata.name")


@pytest.mark.parametrize(
    ("mutation", "fragment"),
    [
        (_set("spec.domain", ".".join(["a" * 60] * 4)), "spec.domain"),
        (_set("spec.tenants.0.claimTemplates.0.name", ".".join(["c" * 60] * 4)), "255"),
        (_set("spec.delivery.path", "../../etc"), "spec.delivery.path"),
        (_set("spec.delivery.path", "/srv/dist"), "spec.delivery.path"),
    ],
    ids=["long-domain", "long-claim-template", "delivery-path-dots", "delivery-path-absolute"],
)
def test_names_valid_for_kubernetes_but_not_as_files_are_refused(
    tmp_path: Path, mutation: Mutation, fragment: str
) -> None:
    doc = minimal_spec()
    mutation(doc)
    out = tmp_path / "out"
    _assert_refused(_synth(write_spec(tmp_path / "lab.yaml", doc), out), out, fragment)


def _raw(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "lab.yaml"
    path.write_bytes(data)
    return path


SPEC_TEXT = yaml.safe_dump(minimal_spec(), sort_keys=False)


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (SPEC_TEXT.replace("kind: Platform", "kind: Platform\nkind: Platform").encode(), "duplicate key"),
        (
            b"a: &a ["
            + b"x," * 10
            + b"]\n"
            + b"".join(
                b"%c: &%c [*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c]\n" % ((98 + i, 98 + i) + (97 + i,) * 8)
                for i in range(8)
            ),
            "aliases expand",
        ),
        (b"a: &a [*a]\n", "alias"),
        ((SPEC_TEXT + "---\n" + SPEC_TEXT).encode(), "2 documents"),
        (b"", "empty"),
        (b"\xff\xfe" + SPEC_TEXT.encode("utf-16-le"), "not UTF-8"),
        (b"[" * 100_000, "nesting is deeper"),
        (b"!!python/object:os.system {}\n", "YAML error"),
        (b"spec: [unclosed\n", "line 2 column 1: YAML error"),
        (b"- just\n- a list\n", "error:"),
        (b"42\n", "error:"),
    ],
    ids=[
        "duplicate-key",
        "billion-laughs",
        "recursive-alias",
        "two-documents",
        "empty",
        "utf16",
        "deep-nesting",
        "python-tag",
        "syntax",
        "list",
        "scalar",
    ],
)
def test_hostile_yaml_is_refused(tmp_path: Path, data: bytes, fragment: str) -> None:
    out = tmp_path / "out"
    _assert_refused(_synth(_raw(tmp_path, data), out), out, fragment)


def test_oversized_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "lab.yaml"
    with path.open("wb") as handle:
        handle.truncate(MAX_FILE_BYTES + 1)
    out = tmp_path / "out"
    _assert_refused(_synth(path, out), out, "over the limit")


@pytest.mark.parametrize("kind", ["fifo", "device", "directory"])
def test_files_that_are_not_regular_files_are_refused_without_blocking(tmp_path: Path, kind: str) -> None:
    # GIVEN a path that would block (FIFO) or never end (/dev/zero) if read naively
    path = tmp_path / "lab.yaml"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        path.symlink_to("/dev/zero")
    else:
        path.mkdir()
    out = tmp_path / "out"
    # WHEN / THEN it is refused at once
    _assert_refused(_synth(path, out), out, str(path))


@pytest.mark.parametrize(
    ("source", "fragment"),
    [
        ("x = 1\nraise RuntimeError('boom')\n", "RuntimeError: boom"),
        ("import sys\nsys.exit(0)\n", "SystemExit: 0"),
        ("x = 1\ny = (\n", "SyntaxError"),
    ],
    ids=["raises", "sys-exit", "syntax-error"],
)
def test_a_python_stack_that_fails_names_its_file_and_line(
    tmp_path: Path, source: str, fragment: str
) -> None:
    # GIVEN a stack that raises, exits (which must not pass for a clean run) or does not parse
    stack = tmp_path / "lab.py"
    stack.write_text(source)
    out = tmp_path / "out"
    # WHEN / THEN exit 2 at the stack's file and line
    _assert_refused(_synth(stack, out), out, f"{stack}:line 2:", fragment)


def test_an_unexpected_exception_is_an_internal_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a bug deep in rendering
    def broken(*_: Any, **__: Any) -> Any:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr("gpuplatform.commands.synth.render_tree", broken)
    spec = write_spec(tmp_path / "lab.yaml", minimal_spec())
    out = tmp_path / "out"
    # WHEN synth runs with and without --debug
    plain = _synth(spec, out)
    debug = CliRunner().invoke(main, ["--debug", "synth", str(spec), "--out", str(out)])
    # THEN it is exit 70 with one `error: internal:` line; the traceback only with --debug
    assert plain.exit_code == 70
    assert plain.stderr == "error: internal: ZeroDivisionError: division by zero\n"
    assert debug.exit_code == 70
    assert "Traceback" in debug.stderr and debug.stderr.endswith(
        "error: internal: ZeroDivisionError: division by zero\n"
    )
    assert not out.exists()


@pytest.mark.parametrize("kind", ["file", "missing-parent-in-proc"])
def test_an_unusable_output_folder_is_bad_input(tmp_path: Path, kind: str) -> None:
    out = tmp_path / "afile" if kind == "file" else Path("/proc/gpuplatform-nope")
    if kind == "file":
        out.write_text("")
    spec = write_spec(tmp_path / "lab.yaml", minimal_spec())
    result = _synth(spec, out)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {out}: cannot be used as the output folder")
