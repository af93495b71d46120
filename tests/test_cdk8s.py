"""cdk8s interop: the reference wave synthesised through cdk8s equals the native renderer's objects."""

from __future__ import annotations

import os
import shutil

import pytest

from gpuplatform.model import Platform
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.wave_objects import wave_objects

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None, reason="cdk8s runs on Node.js, which is not installed"
)
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "1")
os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")


def _normalise(objects: list[dict]) -> list[dict]:  # type: ignore[type-arg]
    """cdk8s sorts keys; compare content, in the native apply order."""
    return sorted(
        objects, key=lambda o: (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"])
    )


@pytest.mark.parametrize("namespace", [None, "platform-team"])
def test_reference_wave_through_cdk8s_equals_native(reference: Platform, namespace: str | None) -> None:
    cdk8s = pytest.importorskip("cdk8s")
    from gpuplatform.cdk8s import WaveObjects

    # GIVEN a user's chart, with or without a default namespace
    app = cdk8s.App()
    chart = cdk8s.Chart(app, "gpu", namespace=namespace)
    # WHEN the reference wave is added and synthesised
    WaveObjects(chart, "wave", platform=reference, wave="native-claim-pilot")
    synthesised = cdk8s.Testing.synth(chart)
    # THEN the objects are the native renderer's; cluster-scoped kinds gained no namespace
    native = wave_objects(plan_platform(reference), "native-claim-pilot")
    kinds = {o["kind"] for o in native}
    assert {"Node", "DeviceClass", "Namespace", "ResourceClaimTemplate", "Job"} <= kinds
    if namespace is None:
        assert _normalise(synthesised) == _normalise(native)
    else:
        for obj in synthesised:
            if obj["kind"] in (
                "Node",
                "DeviceClass",
                "Namespace",
                "ClusterRole",
                "ValidatingAdmissionPolicy",
            ):
                assert "namespace" not in obj["metadata"], obj["kind"]
        cluster = [o for o in synthesised if "namespace" not in o["metadata"]]
        assert _normalise(cluster) == _normalise([o for o in native if "namespace" not in o["metadata"]])


def test_core_does_not_import_cdk8s() -> None:
    import subprocess
    import sys

    code = "import sys, gpuplatform.cli, gpuplatform.output.synth; print('cdk8s' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
