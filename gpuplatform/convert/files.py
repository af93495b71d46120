"""`gpuplatform convert`: every file converted in memory first, then written (or printed).

Inputs are never overwritten: an output that would land on an input file, or two outputs that
would land on one file, refuse the whole run before anything is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gpuplatform.convert.manifests import Conversion, convert_text, template_key
from gpuplatform.convert.targets import Targets
from gpuplatform.errors import InputError, Problem
from gpuplatform.load.yaml_input import read_text
from gpuplatform.output.write import refuse_linked_folder, write_file
from gpuplatform.output.yaml import dump_documents

__all__ = ["ConvertResult", "convert_files"]


@dataclass
class ConvertResult:
    """What to print on stdout, and the warnings and notes for stderr."""

    lines: list[str] = field(default_factory=list)
    notes: list[Problem] = field(default_factory=list)


def _outputs(path: Path, out: Path) -> tuple[Path, Path]:
    return out / path.name, out / f"{path.stem}.claimtemplates.yaml"


def _check_outputs(files: Sequence[Path], out: Path) -> None:
    inputs = {p.resolve() for p in files}
    owner: dict[Path, Path] = {}
    problems = []
    for path in files:
        for target in _outputs(path, out):
            resolved = target.resolve()
            if resolved in inputs:
                problems.append(
                    Problem(
                        "--out",
                        "",
                        "",
                        f"{target} would overwrite the input {resolved}: choose another --out",
                    )
                )
            elif resolved in owner and owner[resolved] != path:
                problems.append(
                    Problem("--out", "", "", f"{owner[resolved]} and {path} would both write {target}")
                )
            owner.setdefault(resolved, path)
    if problems:
        raise InputError(problems)


def _repeated_templates(conversions: Sequence[tuple[Path, Conversion]]) -> list[Problem]:
    """A claim template two files render (one workload in both): applying both would clash."""
    first: dict[tuple[str, str], Path] = {}
    problems = []
    for path, conversion in conversions:
        for template in conversion.templates:
            key = template_key(template)
            owner = first.setdefault(key, path)
            if owner != path:
                problems.append(
                    Problem(
                        str(path),
                        "",
                        "",
                        f"renders ResourceClaimTemplate {key[0] or '<default>'}/{key[1]}, which {owner} "
                        "already renders: convert each workload once",
                    )
                )
    return problems


def convert_files(
    files: Sequence[Path], targets: Targets, out: Path | None, *, share: bool, kubernetes: str
) -> ConvertResult:
    """Convert `files`; with `out`, write `<name>` and `<stem>.claimtemplates.yaml` there.

    Nothing is written unless every file converts and no output lands on an input.
    """
    if out is not None:
        refuse_linked_folder(out)
        _check_outputs(files, out)
    conversions: list[tuple[Path, Conversion]] = []
    problems: list[Problem] = []
    for path in files:
        try:
            conversions.append(
                (path, convert_text(read_text(path), str(path), targets, share=share, kubernetes=kubernetes))
            )
        except InputError as exc:
            problems += exc.problems
    problems += _repeated_templates(conversions)
    if problems:
        raise InputError(problems)
    result = ConvertResult(notes=[n for _, c in conversions for n in c.notes])
    if out is None:
        result.lines = [c.text + "---\n" + dump_documents(c.templates) for _, c in conversions]
        return result
    links = [t for path, _ in conversions for t in _outputs(path, out) if t.is_symlink()]
    if links:
        raise InputError(
            [
                Problem(str(t), "", "", "is a symbolic link; gpuplatform does not write through links")
                for t in links
            ]
        )
    out.mkdir(parents=True, exist_ok=True)
    for path, c in conversions:
        manifest, templates = _outputs(path, out)
        write_file(manifest, c.text.encode())
        write_file(templates, dump_documents(c.templates).encode())
        result.lines.append(f"wrote {manifest} ({', '.join(c.converted)}) and {templates}")
    return result
