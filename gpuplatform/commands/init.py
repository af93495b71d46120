"""`gpuplatform init`: a starting spec from a running cluster's snapshot."""

from __future__ import annotations

from pathlib import Path

from gpuplatform.evidence.init import initial_spec
from gpuplatform.output.write import write_file
from gpuplatform.snapshot.read import load_snapshot

__all__ = ["init_command"]


def init_command(snapshot: str, name: str, domain: str, out: str | None = None) -> str:
    """The spec of the cluster in the `snapshot` folder (every GPU node legacy, decisions marked
    TODO), written to `out`; what to print: the spec itself without `out`, else where it went."""
    text = initial_spec(load_snapshot(Path(snapshot)), name, domain)
    if out is None:
        return text
    write_file(Path(out), text.encode())
    return f"wrote {out}\n"
