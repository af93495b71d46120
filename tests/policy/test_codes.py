"""Every GPnnn code names one finding: never two, never reused, and each is in docs/policy.md."""

from __future__ import annotations

import re
from collections import Counter

from gpuplatform.capacity.verdicts import CAPACITY_CODES
from gpuplatform.policy.explain import CHECK_CODES, RETIRED_CODES
from gpuplatform.policy.rules import RULES
from tests.conftest import REPO


def test_no_code_is_defined_twice() -> None:
    """Rules, `check`'s selector verdicts, capacity verdicts and retired codes share one space
    (`gpuplatform explain CODE` would print only the first)."""
    tables = [RULES, CHECK_CODES, CAPACITY_CODES, RETIRED_CODES]
    counts = Counter(code for table in tables for code in table)
    assert [code for code, n in counts.items() if n > 1] == []


def test_every_live_code_is_in_the_policy_table() -> None:
    documented = set(re.findall(r"^\| (GP\d{3}) \|", (REPO / "docs" / "policy.md").read_text(), re.MULTILINE))
    assert sorted({*RULES, *CHECK_CODES, *CAPACITY_CODES} - documented) == []
