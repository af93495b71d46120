"""The fake `helm` as the rehearsal's controllers see it while a runbook step runs it."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
import yaml

from gpuplatform.rehearse.fakes import main


def test_helm_upgrade_merges_values_into_the_release(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REHEARSAL_STATE", str(tmp_path))
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text(yaml.safe_dump({"cdi": {"enabled": True}, "devicePlugin": {"enabled": True}}))
    second.write_text(yaml.safe_dump({"devicePlugin": {"enabled": False}}))
    for values in (first, second):
        assert (
            main(
                [
                    "helm",
                    "upgrade",
                    "gpu-operator",
                    "nvidia/gpu-operator",
                    "--reuse-values",
                    "-f",
                    str(values),
                ]
            )
            == 0
        )
    release = json.loads((tmp_path / "helm" / "gpu-operator.json").read_text())
    assert release == {"cdi": {"enabled": True}, "devicePlugin": {"enabled": False}}


def test_a_reader_never_sees_a_release_half_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The stack reads the release's values in its loop while `helm upgrade` writes them."""
    monkeypatch.setenv("REHEARSAL_STATE", str(tmp_path))
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({"daemonsets": {"labels": {f"k{i}": "v" * 64 for i in range(2000)}}}))
    target = tmp_path / "helm" / "gpu-operator.json"
    done = threading.Event()
    torn: list[str] = []

    def read() -> None:
        while not done.is_set():
            if target.is_file():
                text = target.read_text()
                try:
                    json.loads(text)
                except ValueError:
                    torn.append(text[:40])

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for _ in range(40):
            main(["helm", "upgrade", "gpu-operator", "chart", "--reuse-values", "-f", str(values)])
    finally:
        done.set()
        reader.join()
    assert not torn
