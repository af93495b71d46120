"""Rows as a terminal table, CSV or YAML (the register and the node list)."""

from __future__ import annotations

import csv
import io
import re
from typing import Any

from gpuplatform.output.yaml import dump_yaml

__all__ = ["header", "render_rows"]

#: Columns are three spaces apart, as in kubectl, since a header may hold spaces itself.
_GAP = "   "
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def header(key: str) -> str:
    """`gpusPerPod` -> `GPUS PER POD`: a row key as a kubectl-style column header."""
    return " ".join(_WORD.findall(key)).upper()


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
    keys = list(rows[0])
    cells = [[_cell(r[k]) for k in keys] for r in rows]
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(keys)
        writer.writerows(cells)
        return buffer.getvalue()
    titles = [header(k) for k in keys]
    widths = [max(len(t), *(len(c[i]) for c in cells)) for i, t in enumerate(titles)]
    lines = [_GAP.join(t.ljust(w) for t, w in zip(titles, widths, strict=True)).rstrip()]
    lines += [_GAP.join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    return "\n".join(lines) + "\n"
