"""Version facts read from their one table: the driver manager each GPU Operator release ships."""

from __future__ import annotations

import pytest

from gpuplatform.charts.model import render_gpu_operator
from gpuplatform.versions import GPU_OPERATOR_DRIVER_MANAGER, driver_manager_of, parse_release


@pytest.mark.parametrize(
    ("operator", "manager"),
    [
        ("25.3.0", "0.9.0"),
        ("26.3.1", "0.10.0"),
        ("26.3.2", "0.11.0"),
        ("26.3.9", "0.11.0"),
        ("26.7.0", "0.12.0"),
    ],
)
def test_the_driver_manager_of_an_operator_release(operator: str, manager: str) -> None:
    assert str(driver_manager_of(parse_release(operator))) == manager


@pytest.mark.parametrize("operator", sorted(GPU_OPERATOR_DRIVER_MANAGER))
def test_the_chart_model_runs_the_manager_the_table_names(operator: str) -> None:
    """The chart model's default manager is the version table's, not a second copy of it."""
    rendered = render_gpu_operator(operator, {})
    assert rendered.manager_version == f"v{GPU_OPERATOR_DRIVER_MANAGER[operator]}"
