"""A Platform's verbs (issue 37, item 3): each returns the typed report of the command the CLI
runs, with the same text, data and exit code; several platforms are written by `gpuplatform.synth`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import gpuplatform as gp
from gpuplatform.cli import main
from gpuplatform.errors import InputError
from gpuplatform.load.stacks import load_stack
from tests.conftest import REPO
from tests.sdk import lab_platform

STACK = str(REPO / "stacks" / "reference.py")


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def cli_json(*args: str) -> Any:
    result = run(*args, "--format", "json")
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def reference() -> gp.Platform:
    """The reference stack's platform (without its staging overlay)."""
    return load_stack(Path(STACK))[0].platform


def test_plan_is_what_the_cli_prints(reference: gp.Platform) -> None:
    report = reference.plan()
    cli = run("plan", STACK, "--platform", "reference")
    assert (report.exit_code, report.text() + "\n") == (cli.exit_code, cli.stdout)
    assert [report.as_dict()] == cli_json("plan", STACK, "--platform", "reference")


def test_a_transition_is_what_the_cli_prints(reference: gp.Platform) -> None:
    report = reference.transition("native-claim-pilot", "compatibility-bridge")
    args = (
        "plan",
        STACK,
        "--platform",
        "reference",
        "--from",
        "native-claim-pilot",
        "--to",
        "compatibility-bridge",
    )
    assert report.text() + "\n" == run(*args).stdout
    assert [report.as_dict()] == cli_json(*args)


def test_a_refused_transition_exits_1() -> None:
    # GIVEN the new pool moving in the wave that adds the tenant
    old = lab_platform().node_pools[0]
    new = gp.NodePool(name="new", nodes=["gpu-02"], product="H100-80GB", migrates_in="claims")
    lab = lab_platform(node_pools=[old, new])
    # WHEN the transition is reviewed THEN it is refused, naming a drain wave
    report = lab.transition("pilot", "claims")
    assert report.exit_code == 1
    assert "split them into two waves" in report.text()
    assert report.as_dict()["refused"]


def test_check_is_what_the_cli_finds(reference: gp.Platform) -> None:
    report = reference.check(source=STACK)
    assert report.exit_code == 0
    assert [report.as_dict()] == cli_json("check", STACK, "--platform", "reference")
    assert report.text().startswith(run("check", STACK, "--platform", "reference").stdout.rstrip("\n"))


def test_capacity_is_what_the_cli_finds(reference: gp.Platform) -> None:
    report = reference.capacity(all_waves=True)
    assert report.exit_code == 0
    assert report.as_dict()["waves"] == cli_json("capacity", STACK, "--platform", "reference", "--all")
    assert report.text() + "\n" == run("capacity", STACK, "--platform", "reference", "--all").stdout


def test_simulate_is_what_the_cli_replays(reference: gp.Platform) -> None:
    report = reference.simulate(from_wave="pilot-pool", to_wave="driver-validation", source=STACK)
    args = ("simulate", STACK, "--platform", "reference", "--from", "pilot-pool", "--to", "driver-validation")
    assert report.exit_code == 0
    assert [report.as_dict()] == cli_json(*args)
    assert report.text() + "\n" == run(*args).stdout


def test_render_is_what_synth_writes(reference: gp.Platform, tmp_path: Path) -> None:
    report = reference.render()
    written = reference.synth(tmp_path)
    on_disk = {
        p.relative_to(tmp_path / "reference").as_posix(): p.read_bytes()
        for p in sorted((tmp_path / "reference").rglob("*"))
        if p.is_file()
    }
    assert (written.exit_code, written.written, written.text()) == (
        0,
        ["reference"],
        f"wrote {tmp_path}/reference",
    )
    assert report.files == on_disk
    assert sorted(report.text().splitlines()) == sorted(f"reference/{p}" for p in on_disk)


def test_synth_refuses_error_findings_and_writes_nothing(tmp_path: Path) -> None:
    # GIVEN two platform bridges for nvidia.com/gpu (GP120, an error)
    bridges = [gp.BridgeClass(name="a"), gp.BridgeClass(name="b")]
    waves = [*lab_platform().waves]
    waves.insert(3, gp.Wave(name="bridge", stage="compatibility-bridge", bridges=bridges))
    lab = lab_platform(bridges=bridges, waves=waves)
    # WHEN it is written THEN nothing is, and the report says why; allowed, it is written
    refused = lab.synth(tmp_path / "out")
    assert (refused.exit_code, refused.refused, refused.written) == (1, True, [])
    assert "GP120" in refused.text() and "nothing written" in refused.text()
    assert not (tmp_path / "out").exists()
    allowed = lab.synth(tmp_path / "out", allow=["GP120"])
    assert (allowed.exit_code, allowed.written) == (0, ["lab"])
    assert json.loads((tmp_path / "out" / "lab" / "gpuplatform.lock.json").read_text())["overrides"] == [
        "GP120"
    ]


def test_a_stack_of_several_platforms_is_written_by_one_call(tmp_path: Path) -> None:
    # GIVEN a stack file that defines two platforms and writes both
    stack = tmp_path / "fleet.py"
    stack.write_text(
        "import sys\n"
        "import gpuplatform as gp\n"
        "from tests.sdk import lab_platform\n"
        "east = lab_platform(name='east')\n"
        "west = lab_platform(name='west', active_wave='claims')\n"
        "platforms = [east, west]\n"
        "if __name__ == '__main__':\n"
        "    report = gp.synth(sys.argv[1], *platforms, source=__file__)\n"
        "    sys.exit(report.exit_code)\n"
    )
    # WHEN run as a program, and synthesized by the CLI
    import runpy
    import sys

    argv = sys.argv
    sys.argv = [str(stack), str(tmp_path / "python")]
    try:
        with pytest.raises(SystemExit) as exited:
            runpy.run_path(str(stack), run_name="__main__")
    finally:
        sys.argv = argv
    cli = run("synth", str(stack), "--out", str(tmp_path / "cli"))
    # THEN both wrote the same two trees, byte for byte
    assert (exited.value.code, cli.exit_code) == (0, 0)

    def files(root: Path) -> dict[str, bytes]:
        return {
            p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
        }

    assert sorted(p.name for p in (tmp_path / "python").iterdir() if not p.name.startswith(".")) == [
        "east",
        "west",
    ]
    assert files(tmp_path / "python") == files(tmp_path / "cli")


def test_synth_of_no_platform_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="name at least one platform"):
        gp.synth(tmp_path)
    assert list(tmp_path.iterdir()) == []
