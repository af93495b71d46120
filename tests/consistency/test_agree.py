"""The consistency corpus: on generated platforms, `check`, `synth`, `simulate` and `capacity` give
one verdict and none crashes (exit 70).

One verdict means: `synth` refuses exactly what `check` refuses; `simulate` fails exactly where
`check` reports GP290 (an error, so `check` never exits 0 where `simulate` exits 1); `capacity`
fails exactly where `check` reports its verdict (GP280, an error since issue #38; GP282, a warning:
capacity/verdicts.py).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from gpuplatform.cli import main
from tests.consistency.generate import DIMENSIONS, Case, corpus
from tests.specs import write_spec

CASES = corpus(12)
_CODE = re.compile(r"^(?:error|warning|info): \S+ (GP\d+) ", re.MULTILINE)


def _run(*args: str) -> Result:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code != 70, f"{args[0]} crashed: {result.stderr}"
    return result


def test_the_corpus_covers_every_value_of_every_dimension() -> None:
    for name, values in DIMENSIONS.items():
        assert {repr(c.values[name]) for c in CASES} == {repr(v) for v in values}, name


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_check_synth_simulate_and_capacity_agree(tmp_path: Path, case: Case) -> None:
    spec = str(write_spec(tmp_path / "lab.yaml", case.doc))
    checked = _run("check", spec)
    codes = set(_CODE.findall(checked.stderr))
    synth = _run("synth", spec, "--out", str(tmp_path / "out"))
    simulated = _run("simulate", spec)
    capacity = _run("capacity", spec, "--all")
    context = f"{case.values}\n{checked.stderr}"
    assert synth.exit_code == checked.exit_code, context
    assert (simulated.exit_code == 1) == ("GP290" in codes), context
    assert not (checked.exit_code == 0 and simulated.exit_code == 1), context
    assert (capacity.exit_code == 1) == bool(codes & {"GP280", "GP282"}), context
