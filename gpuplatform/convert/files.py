"""`gpuplatform convert`: every file converted in memory first, then written (or printed)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gpuplatform.convert.manifests import Conversion, convert_text
from gpuplatform.errors import InputError, Problem
from gpuplatform.load.yaml_input import read_text
from gpuplatform.model.base import is_dns_subdomain
from gpuplatform.output.write import write_file
from gpuplatform.output.yaml import dump_documents

__all__ = ["convert_files"]


def convert_files(
    files: Sequence[Path], tier: str, out: Path | None, shared: bool, kubernetes: str
) -> list[str]:
    """Convert `files`; with `out`, write `<name>` and `<stem>.claimtemplates.yaml` there.

    Returns what to print: the converted documents and templates (stdout mode) or one line per
    file written. Nothing is written unless every file converts.
    """
    if not is_dns_subdomain(tier):
        raise InputError.single("--tier", "", f"{tier!r} is not a DeviceClass name (a DNS subdomain)")
    conversions: list[tuple[Path, Conversion]] = []
    problems: list[Problem] = []
    for path in files:
        try:
            conversions.append(
                (path, convert_text(read_text(path), str(path), tier, shared=shared, kubernetes=kubernetes))
            )
        except InputError as exc:
            problems += exc.problems
    if problems:
        raise InputError(problems)
    if out is None:
        return [c.text + "---\n" + dump_documents(c.templates) for _, c in conversions]
    written: dict[str, Path] = {}
    for path, _ in conversions:
        for name in (path.name, f"{path.stem}.claimtemplates.yaml"):
            if name in written:
                problems.append(
                    Problem(str(path), "", "", f"would write {out / name}, which {written[name]} writes too")
                )
            written.setdefault(name, path)
    if problems:
        raise InputError(problems)
    out.mkdir(parents=True, exist_ok=True)
    lines = []
    for path, c in conversions:
        write_file(out / path.name, c.text.encode())
        write_file(out / f"{path.stem}.claimtemplates.yaml", dump_documents(c.templates).encode())
        lines.append(
            f"wrote {out / path.name} ({', '.join(c.converted)}) and {out / (path.stem + '.claimtemplates.yaml')}"
        )
    return lines
