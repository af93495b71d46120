"""No command follows a link: in a rendered tree (`diff`), or as the folder `--out` names."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from gpuplatform.cli import main
from tests.conftest import REPO
from tests.specs import listing, minimal_spec, write_spec

SECRET = "CI_TOKEN=hunter2\n"


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


@pytest.fixture
def rendered(tmp_path: Path) -> tuple[Path, Path]:
    """A spec and the tree synth rendered from it into `out`."""
    spec, out = write_spec(tmp_path / "lab.yaml", minimal_spec()), tmp_path / "out"
    assert run("synth", str(spec), "--out", str(out)).exit_code == 0
    return spec, out


@pytest.mark.parametrize("planted", ["replaces-a-file", "new-file"])
def test_diff_does_not_read_a_link_planted_in_the_rendered_tree(
    tmp_path: Path, rendered: tuple[Path, Path], planted: str
) -> None:
    # GIVEN a rendered tree in which a file is (or a new file is) a link to a secret
    spec, out = rendered
    (tmp_path / "environ").write_text(SECRET)
    lock = out / "lab" / "gpuplatform.lock.json"
    link = lock if planted == "replaces-a-file" else out / "lab" / "waves" / "notes.yaml"
    if link.exists():
        link.unlink()
    link.symlink_to(tmp_path / "environ")
    # WHEN diff compares it with what synth renders / THEN it reports the link, never its target
    result = run("diff", str(spec), "--out", str(out))
    assert result.exit_code == 1
    assert "hunter2" not in result.output
    rel = link.relative_to(out).as_posix()
    assert f"not a regular file, not read (a link is never followed): a/{rel}\n" in result.stdout


def _linked_out(tmp_path: Path, rendered: tuple[Path, Path]) -> tuple[Path, Path]:
    _, out = rendered
    (tmp_path / "linked").symlink_to(out)
    return out, tmp_path / "linked"


@pytest.mark.parametrize("command", ["synth", "synth --check", "diff"])
def test_an_out_folder_that_is_a_link_is_refused(
    tmp_path: Path, rendered: tuple[Path, Path], command: str
) -> None:
    spec, _ = rendered
    _, linked = _linked_out(tmp_path, rendered)
    before = listing(tmp_path)
    result = run(*command.split()[:1], str(spec), *command.split()[1:], "--out", str(linked))
    assert result.exit_code == 2, result.output
    assert (
        result.stderr
        == f"error: {linked}: is a symbolic link; gpuplatform writes only into the real folder, name that\n"
    )
    assert listing(tmp_path) == before


def test_convert_refuses_an_out_folder_that_is_a_link(tmp_path: Path) -> None:
    source = tmp_path / "trainer.yaml"
    source.write_text((REPO / "stacks" / "manifests" / "trainer.yaml").read_text())
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "out").symlink_to(tmp_path / "elsewhere")
    result = run("convert", str(source), "--tier", "gpu.nvidia.com", "--out", str(tmp_path / "out"))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {tmp_path / 'out'}: is a symbolic link")
    assert list((tmp_path / "elsewhere").iterdir()) == []
