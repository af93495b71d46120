"""docs/evidence.md's table of what the gates match is the gate code's, both ways.

Every label, name and prefix the matchers and programs compare a snapshot's objects with is in the
table (so a snapshot exported from a real cluster can be checked against it), and every entry of
the table is read by that code (so the table never names a label the gates ignore).
"""

from __future__ import annotations

import re
from pathlib import Path

from gpuplatform import labels
from gpuplatform.gates import matchers, programs
from gpuplatform.gates.catalog import ALL
from gpuplatform.gates.nodes import PROVISIONER_LABELS
from tests.sdk import lab_platform

REPO = Path(__file__).resolve().parents[2]
_HEADING = "### What the gates match: labels and fields of an exported snapshot"


def _entries() -> set[str]:
    text = (REPO / "docs" / "evidence.md").read_text()
    table = text.split(_HEADING, 1)[1].split("\n\n")[2]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    return {entry for row in rows for entry in re.findall(r"`([^`]+)`", row.split(" | ")[0])}


def _matched_by_code() -> set[str]:
    """Every string the gate code compares labels, names, images, paths and resources with."""
    m = matchers
    out = {
        "=".join(m.DEVICE_PLUGIN_LABEL),
        "=".join(m.DRA_CONTROLLER_COMPONENT),
        m.DEVICE_PLUGIN_IMAGE,
        m.DEVICE_PLUGIN_SOCKETS,
        m.DRA_KUBELET_PLUGIN_SUFFIX,
        labels.NVIDIA_RESOURCE_PREFIX,
        labels.GPU_RESOURCE,
        m.DRA_DRIVER,
        m.VISIBLE_DEVICES,
        *m.GPU_STACK_DAEMONSET_PREFIXES,
        *PROVISIONER_LABELS.values(),
        *re.findall(r'labels\["([^"]+)"\]', programs.PRELUDE),
    }
    for operand in m.OPERANDS:
        out |= {"=".join(operand.label), operand.deploy_label}
    platform = lab_platform()
    out.add(platform.mode_label_key.replace(platform.domain, "<domain>"))
    return out


def test_every_label_and_name_the_gates_match_is_in_the_doc() -> None:
    assert _matched_by_code() - _entries() == set()


def test_every_entry_of_the_doc_is_matched_by_the_gate_code() -> None:
    folder = REPO / "gpuplatform" / "gates"
    files = [folder / "programs.py", folder / "matchers.py", *sorted((folder / "catalog").glob("*.py"))]
    code = "".join(f.read_text() for f in files)
    for entry in _entries() - _matched_by_code():
        # a field path: each of its names is read by a program (`.spec.nodeName`, `.ready`)
        names = entry.replace("[]", "").split(".")
        assert all(f".{name}" in code for name in names), entry


def test_every_gate_of_the_catalog_has_its_row_and_every_row_is_a_gate() -> None:
    text = (REPO / "docs" / "evidence.md").read_text()
    table = text.split("| gate | phase | holds when |", 1)[1].split("\n\n", 1)[0]
    rows = {row.split(" | ")[0].removeprefix("| ").strip("`"): row for row in table.splitlines()[2:]}
    assert sorted(rows) == sorted(g.id for g in ALL)
    for gate in ALL:
        phase = rows[gate.id].split(" | ")[1]
        assert phase.startswith(gate.phase if gate.job else "evidence"), gate.id
