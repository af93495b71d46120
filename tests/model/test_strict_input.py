"""A spec says what it means: no boolean taken for a count, no look-alike character in a path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpuplatform.errors import InputError
from gpuplatform.load.stacks import load_stack
from tests.specs import minimal_spec, write_spec


def _load(tmp_path: Path, change: Any, raw: tuple[str, str] | None = None) -> list[str]:
    doc = minimal_spec()
    change(doc["spec"])
    spec = write_spec(tmp_path / "lab.yaml", doc)
    if raw is not None:
        spec.write_text(spec.read_text().replace(*raw))
    try:
        load_stack(spec)
    except InputError as exc:
        return [p.loc for p in exc.problems]
    return []


@pytest.mark.parametrize("word", ["yes", "true", "on", "y"])
def test_a_boolean_is_not_a_gpu_count(tmp_path: Path, word: str) -> None:
    # GIVEN `gpusPerNode: yes` (Helm reads yes as true; pydantic's lax int read true as 1)
    def change(spec: dict[str, Any]) -> None:
        spec["nodePools"][0]["gpusPerNode"] = "__COUNT__"

    # WHEN loaded / THEN refused at the field
    assert _load(tmp_path, change, ("__COUNT__", word)) == ["spec.nodePools[0].gpusPerNode"]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        (("tenants", 0, "claimTemplates", 0, "count"), True),
        (("tenants", 0, "quota", "devices"), True),
        (("nodePools", 0, "gpusPerNode"), 8.0),
        (("nodePools", 0, "gpusPerNode"), "8"),
    ],
)
def test_counts_are_integers_only(tmp_path: Path, field: tuple[Any, ...], value: Any) -> None:
    def change(spec: dict[str, Any]) -> None:
        target: Any = spec
        for key in field[:-1]:
            if isinstance(target, dict) and key not in target:
                target[key] = {}
            target = target[key]
        target[field[-1]] = value

    loc = "spec." + ".".join(f"[{k}]" if isinstance(k, int) else k for k in field).replace(".[", "[")
    assert loc in _load(tmp_path, change)


@pytest.mark.parametrize("path", ["dist/\u0430pps", "d\u0456st", "dist\u2215x", "ｄist", "dist/caf\u00e9"])
def test_delivery_path_is_ascii(tmp_path: Path, path: str) -> None:
    def change(spec: dict[str, Any]) -> None:
        spec["delivery"]["path"] = path

    assert _load(tmp_path, change) == ["spec.delivery.path"]


def test_an_ascii_delivery_path_is_fine(tmp_path: Path) -> None:
    def change(spec: dict[str, Any]) -> None:
        spec["delivery"]["path"] = "clusters/prod-eu_1/gpu.v2"

    assert _load(tmp_path, change) == []
