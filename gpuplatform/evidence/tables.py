"""Rows as a terminal table, CSV or YAML (the register and the node list)."""

from __future__ import annotations

import csv
import io
from typing import Any

from gpuplatform.output.yaml import dump_yaml

__all__ = ["render_rows"]


def _cell(value: Any) -> str:
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in value.items())
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def render_rows(rows: list[dict[str, Any]], fmt: str) -> str:
    """`table`, `csv` or `yaml` text of `rows` (columns in the rows' key order)."""
    if fmt == "yaml":
        return dump_yaml(rows) if rows else "[]\n"
    if not rows:
        return "" if fmt == "csv" else "(none)\n"
    header = list(rows[0])
    cells = [[_cell(r[h]) for h in header] for r in rows]
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(cells)
        return buffer.getvalue()
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(header)]
    lines = ["  ".join(h.upper().ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    return "\n".join(lines) + "\n"
