"""The packaged chart facts are what `helm template` and the chart files say, for every shared chart."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from gpuplatform.charts.extract import extract_facts, facts_file_name, facts_json
from tests.realtools.conftest import CHARTS, Helm


@pytest.mark.parametrize("folder", sorted(p.name for p in CHARTS.glob("*/")) if CHARTS.is_dir() else [])
def test_packaged_facts_equal_a_fresh_extraction(helm: Helm, folder: str) -> None:
    # WHEN the facts are extracted again from the reference chart with the real helm
    doc = extract_facts(helm.binary, CHARTS / folder)
    packaged = resources.files("gpuplatform.charts").joinpath("data", facts_file_name(doc))
    # THEN the package carries exactly them (regenerate with scripts/chart-facts)
    assert packaged.is_file(), f"no facts for {folder}: run scripts/chart-facts {CHARTS / folder}"
    assert json.loads(packaged.read_text()) == json.loads(facts_json(doc)), (
        f"facts of {folder} drifted: run scripts/chart-facts {CHARTS / folder}"
    )
