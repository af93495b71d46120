"""Which nodes a ResourceSlice reaches: Kubernetes' NodeSelector semantics, alike in jq and Python."""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

import jq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuplatform.evidence.twins.selectors import reaches
from gpuplatform.gates.programs import prelude_for

_REACHES = prelude_for("reaches($l; $n)") + "reaches($l; $n)"
_LABELS = {"zone": "a", "rack": "12", "big": "9223372036854775807", "neg": "-3", "odd": "+007", "empty": ""}


def _term(*expressions: dict[str, Any], fields: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    term: dict[str, Any] = {"matchExpressions": list(expressions)}
    if fields is not None:
        term["matchFields"] = fields
    return term


def _req(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)}


def _sel(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"nodeSelector": {"nodeSelectorTerms": list(terms)}}


#: (selection, expected on node "node-1" with `_LABELS`), per the rules of k8s.io/apimachinery labels
#: and k8s.io/component-helpers nodeaffinity.
TABLE: list[tuple[str, dict[str, Any], bool]] = [
    ("nodeName", {"nodeName": "node-1"}, True),
    ("another nodeName", {"nodeName": "node-2"}, False),
    ("allNodes", {"allNodes": True}, True),
    ("allNodes false", {"allNodes": False}, False),
    ("nothing", {}, False),
    ("no terms", _sel(), False),
    ("empty term", _sel({}), False),
    ("empty expressions", _sel(_term()), False),
    ("In", _sel(_term(_req("zone", "In", "b", "a"))), True),
    ("In other", _sel(_term(_req("zone", "In", "b"))), False),
    ("In absent key", _sel(_term(_req("row", "In", ""))), False),
    ("In empty value", _sel(_term(_req("empty", "In", ""))), True),
    ("In without values", _sel(_term(_req("zone", "In"))), False),
    ("NotIn", _sel(_term(_req("zone", "NotIn", "b"))), True),
    ("NotIn own value", _sel(_term(_req("zone", "NotIn", "b", "a"))), False),
    ("NotIn absent key", _sel(_term(_req("row", "NotIn", "x"))), True),
    ("NotIn without values", _sel(_term(_req("row", "NotIn"))), False),
    ("Exists", _sel(_term({"key": "zone", "operator": "Exists"})), True),
    ("Exists absent", _sel(_term({"key": "row", "operator": "Exists"})), False),
    ("Exists with values", _sel(_term(_req("zone", "Exists", "a"))), False),
    ("DoesNotExist", _sel(_term({"key": "row", "operator": "DoesNotExist"})), True),
    ("DoesNotExist present", _sel(_term({"key": "zone", "operator": "DoesNotExist"})), False),
    ("Gt", _sel(_term(_req("rack", "Gt", "9"))), True),
    ("Gt compares numbers not strings", _sel(_term(_req("rack", "Gt", "100"))), False),
    ("Gt equal", _sel(_term(_req("rack", "Gt", "12"))), False),
    ("Lt", _sel(_term(_req("rack", "Lt", "100"))), True),
    ("Lt negative", _sel(_term(_req("neg", "Lt", "-2"))), True),
    ("Gt negative", _sel(_term(_req("neg", "Gt", "-2"))), False),
    ("Gt signed zero-padded label", _sel(_term(_req("odd", "Gt", "6"))), True),
    ("Gt int64 max", _sel(_term(_req("big", "Gt", "9223372036854775806"))), True),
    ("Lt int64 max", _sel(_term(_req("big", "Lt", "9223372036854775806"))), False),
    ("Lt beyond int64", _sel(_term(_req("rack", "Lt", "9223372036854775808"))), False),
    ("Gt label not a number", _sel(_term(_req("zone", "Gt", "1"))), False),
    ("Gt value not a number", _sel(_term(_req("rack", "Gt", "1.5"))), False),
    ("Gt two values", _sel(_term(_req("rack", "Gt", "1", "2"))), False),
    ("Gt absent label", _sel(_term(_req("row", "Gt", "1"))), False),
    ("Gt empty label", _sel(_term(_req("empty", "Gt", "-1"))), False),
    ("unknown operator", _sel(_term(_req("zone", "Equals", "a"))), False),
    ("expressions ANDed", _sel(_term(_req("zone", "In", "a"), _req("rack", "In", "1"))), False),
    ("terms ORed", _sel(_term(_req("rack", "In", "1")), _term(_req("zone", "In", "a"))), True),
    ("matchFields name", _sel(_term(fields=[_req("metadata.name", "In", "node-1")])), True),
    ("matchFields other name", _sel(_term(fields=[_req("metadata.name", "In", "node-2")])), False),
    ("matchFields NotIn", _sel(_term(fields=[_req("metadata.name", "NotIn", "node-2")])), True),
    ("matchFields two values", _sel(_term(fields=[_req("metadata.name", "In", "node-1", "node-2")])), False),
    ("matchFields Exists", _sel(_term(fields=[{"key": "metadata.name", "operator": "Exists"}])), False),
    (
        "matchFields ANDed with labels",
        _sel(_term(_req("zone", "In", "b"), fields=[_req("metadata.name", "In", "node-1")])),
        False,
    ),
    ("matchFields other field", _sel(_term(fields=[_req("spec.unschedulable", "NotIn", "true")])), True),
]


def _jq_binding(selection: dict[str, Any], labels: dict[str, str], node: str) -> Any:
    return jq.compile(_REACHES, args={"l": labels, "n": node}).input_value(selection).first()


def _jq_binary(selection: dict[str, Any], labels: dict[str, str], node: str) -> Any:
    done = subprocess.run(
        ["jq", "--argjson", "l", json.dumps(labels), "--arg", "n", node, _REACHES],
        input=json.dumps(selection),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


@pytest.mark.parametrize(
    ("selection", "expected"), [(s, e) for _, s, e in TABLE], ids=[i for i, _, _ in TABLE]
)
def test_a_selection_reaches_a_node_as_kubernetes_matches_it(
    selection: dict[str, Any], expected: bool
) -> None:
    assert reaches(selection, _LABELS, "node-1") is expected
    assert _jq_binding(selection, _LABELS, "node-1") is expected
    if shutil.which("jq") is not None:
        assert _jq_binary(selection, _LABELS, "node-1") is expected


_VALUE = st.sampled_from(
    ["a", "b", "", "12", "-3", "+4", "007", "9223372036854775807", "9223372036854775808", "x1"]
)
_KEY = st.sampled_from(["zone", "rack", "row"])
_REQUIREMENT = st.builds(
    lambda key, op, values: {"key": key, "operator": op, "values": values},
    _KEY,
    st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Nope"]),
    st.lists(_VALUE, max_size=2),
)
_FIELD = st.builds(
    lambda key, op, values: {"key": key, "operator": op, "values": values},
    st.sampled_from(["metadata.name", "spec.x"]),
    st.sampled_from(["In", "NotIn", "Exists"]),
    st.lists(st.sampled_from(["node-1", "node-2"]), max_size=2),
)
_TERM = st.fixed_dictionaries(
    {},
    optional={
        "matchExpressions": st.lists(_REQUIREMENT, max_size=3),
        "matchFields": st.lists(_FIELD, max_size=2),
    },
)
_SELECTION = st.fixed_dictionaries(
    {},
    optional={
        "nodeName": st.sampled_from(["node-1", "node-2"]),
        "allNodes": st.booleans(),
        "nodeSelector": st.builds(lambda terms: {"nodeSelectorTerms": terms}, st.lists(_TERM, max_size=3)),
    },
)


@settings(max_examples=400, deadline=None)
@given(_SELECTION, st.dictionaries(_KEY, _VALUE, max_size=3))
def test_the_twin_reaches_the_nodes_the_program_reaches(
    selection: dict[str, Any], labels: dict[str, str]
) -> None:
    assert reaches(selection, labels, "node-1") is _jq_binding(selection, labels, "node-1")
