"""A DeviceClass name whose file name file systems refuse is refused by the model, at its field, by
every command (`synth` refused it late and without a field path; `check` and `plan` accepted it)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuplatform.cli import main
from tests.specs import minimal_spec, write_spec

#: 233 characters: `<tier>.<domain>` stays a DNS subdomain (at most 253) for short tiers.
DOMAIN = ".".join(["a" * 60] * 3) + "." + "b" * 50


@pytest.mark.parametrize("command", ["check", "plan", "synth"])
def test_a_device_class_file_name_over_255_bytes_is_refused_at_the_tier(tmp_path: Path, command: str) -> None:
    # GIVEN a tier whose DeviceClass name (258 bytes of file name) is still a DNS subdomain
    doc = minimal_spec()
    doc["spec"]["domain"] = DOMAIN
    doc["spec"]["tiers"].append({"name": "fullgpu", "deviceType": "gpu"})
    spec = write_spec(tmp_path / "lab.yaml", doc)
    # WHEN any command reads it
    result = CliRunner().invoke(
        main, [command, str(spec), *(["--out", str(tmp_path / "out")] if command == "synth" else [])]
    )
    # THEN it is refused at the tier's name, before anything is written
    assert result.exit_code == 2, result.output
    assert (
        f"error: {spec}:spec.tiers[1].name: DeviceClass name 'fullgpu.{DOMAIN}' renders the file"
        in result.stderr
    )
    assert "keep the name within 238 bytes" in result.stderr
    assert not (tmp_path / "out").exists()


def test_a_238_byte_device_class_name_is_fine(tmp_path: Path) -> None:
    doc = minimal_spec()
    doc["spec"]["domain"] = DOMAIN
    doc["spec"]["tiers"].append({"name": "abcd", "deviceType": "gpu"})
    result = CliRunner().invoke(main, ["check", str(write_spec(tmp_path / "lab.yaml", doc))])
    assert "renders the file" not in result.stderr
