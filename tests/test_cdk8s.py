"""cdk8s interop: `WaveObjects` renders exactly what synth renders and refuses what synth refuses."""

from __future__ import annotations

import os
import shutil
from typing import Any

import pytest
import yaml

from gpuplatform.commands.synth import PolicyRefusal, render_files
from gpuplatform.commands.wave_objects import synth_wave_objects
from gpuplatform.errors import InputError
from gpuplatform.load.stacks import load_stack
from gpuplatform.model import Platform, Wave
from gpuplatform.plan.waves import plan_platform
from tests.conftest import REPO

needs_node = pytest.mark.skipif(
    shutil.which("node") is None, reason="cdk8s runs on Node.js, which is not installed"
)
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "1")
os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")


def _synth_objects(platform: Platform, wave: str, engine: str) -> list[dict[str, Any]]:
    """What synth writes for `wave` that `engine` applies: delivery/gates/ + the wave's folder."""
    (loaded,) = [lp for lp in load_stack(REPO / "stacks" / "reference.py") if lp.platform == platform] or [
        None
    ]
    assert loaded is not None
    files = render_files(loaded)
    root = f"waves/{plan_platform(platform).wave(wave).dir_name}/"
    other = {"argocd", "flux"} - {engine}
    # the Nodes live once per pool state under nodes/, in the folders the wave's 10-nodes names
    nodes = tuple(
        f"{r.removeprefix('../../../')}/"
        for r in yaml.safe_load(files[f"{root}10-nodes/kustomization.yaml"])["resources"]
    )
    objects = []
    for path in sorted(files, key=lambda p: not p.startswith("delivery/")):
        if not path.startswith((root, "delivery/gates/", *nodes)) or path.endswith("kustomization.yaml"):
            continue
        if other & set(path.split("/")[:-1]):
            continue
        objects += list(yaml.safe_load_all(files[path]))
    return objects


def _key(obj: dict[str, Any]) -> tuple[str, str, str]:
    return (obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"])


@pytest.mark.parametrize("engine", ["argocd", "flux"])
@pytest.mark.parametrize("wave", ["baseline", "pilot-pool", "native-claim-pilot", "final-cutover"])
def test_wave_objects_are_exactly_what_synth_writes(reference: Platform, wave: str, engine: str) -> None:
    ours = synth_wave_objects(reference, wave, engine=engine)
    assert sorted(ours, key=_key) == sorted(_synth_objects(reference, wave, engine), key=_key)


def test_the_releases_of_the_engine_are_included(reference: Platform) -> None:
    argo = {
        (o["kind"], o["metadata"]["name"])
        for o in synth_wave_objects(reference, "pilot-pool", engine="argocd")
    }
    flux = {
        (o["kind"], o["metadata"]["name"]) for o in synth_wave_objects(reference, "pilot-pool", engine="flux")
    }
    assert ("Application", "reference-dra-driver-nvidia-gpu") in argo and (
        "HelmRelease",
        "dra-driver-nvidia-gpu",
    ) in flux
    assert not any(kind == "HelmRelease" for kind, _ in argo)
    assert not any(kind == "Application" for kind, _ in flux)
    assert ("ServiceAccount", "gpuplatform-gates") in argo  # the gate Jobs' identity comes along


def test_a_platform_with_one_engine_needs_no_engine_argument(reference: Platform) -> None:
    flux_only = reference.model_copy(
        update={"delivery": reference.delivery.model_copy(update={"engines": ("flux",)})}
    )
    kinds = {o["kind"] for o in synth_wave_objects(flux_only, "pilot-pool")}
    assert "HelmRelease" in kinds


@pytest.mark.parametrize(
    ("engine", "message"),
    [
        (None, "platform 'reference' delivers with argocd and flux: pass engine= one of them"),
        ("helm", "engine 'helm' is not one of the platform's delivery.engines (argocd, flux)"),
    ],
)
def test_a_missing_or_unknown_engine_is_refused(
    reference: Platform, engine: str | None, message: str
) -> None:
    with pytest.raises(InputError) as caught:
        synth_wave_objects(reference, "pilot-pool", engine=engine)
    assert caught.value.problems[0].message.startswith(message)


def test_a_mistyped_wave_names_the_waves(reference: Platform) -> None:
    with pytest.raises(InputError) as caught:
        synth_wave_objects(reference, "native-claim-pliot", engine="argocd")
    assert caught.value.problems[0].message == (
        "platform 'reference' has no wave 'native-claim-pliot' (waves: baseline, pilot-pool, driver-validation, "
        "native-claim-pilot, compatibility-bridge, application, final-cutover)"
    )


def _gp130(reference: Platform) -> Platform:
    """The dra-pilot pool moves in the wave that also onboards the pilot tenant (GP130)."""
    pools = tuple(
        p.model_copy(update={"migrates_in": "native-claim-pilot"}) if p.migrates_in else p
        for p in reference.node_pools
    )
    return reference.model_copy(update={"node_pools": pools})


def test_what_synth_refuses_is_refused_with_the_findings(reference: Platform) -> None:
    with pytest.raises(PolicyRefusal) as caught:
        synth_wave_objects(_gp130(reference), "pilot-pool", engine="argocd", source="cdk8s:gpu/wave")
    codes = {p.code for p in caught.value.problems if p.severity == "error"}
    assert "GP130" in codes
    assert all(p.file == "cdk8s:gpu/wave" for p in caught.value.problems)
    assert synth_wave_objects(_gp130(reference), "pilot-pool", engine="argocd", allow=sorted(codes))


def test_a_spec_synth_could_not_load_is_refused(reference: Platform) -> None:
    # GIVEN waves out of the canonical stage order, which pydantic alone accepts
    waves = (*reference.waves[:1], Wave(name="late-baseline", stage="baseline"), *reference.waves[1:])
    broken = reference.model_copy(update={"waves": waves})
    with pytest.raises(InputError) as caught:
        synth_wave_objects(broken, "pilot-pool", engine="argocd")
    assert [p.loc for p in caught.value.problems] == ["spec.waves[1].stage"]


@needs_node
@pytest.mark.parametrize("namespace", [None, "platform-team"])
def test_reference_wave_through_cdk8s_equals_synth(reference: Platform, namespace: str | None) -> None:
    cdk8s = pytest.importorskip("cdk8s")
    from gpuplatform.cdk8s import WaveObjects

    # GIVEN a user's chart, with or without a default namespace
    app = cdk8s.App()
    chart = cdk8s.Chart(app, "gpu", namespace=namespace)
    # WHEN the reference wave is added and synthesised
    WaveObjects(chart, "wave", platform=reference, wave="native-claim-pilot", engine="flux")
    synthesised = cdk8s.Testing.synth(chart)
    # THEN the objects are synth's; cluster-scoped kinds gained no namespace
    native = _synth_objects(reference, "native-claim-pilot", "flux")
    assert {"Node", "DeviceClass", "Namespace", "ResourceClaimTemplate", "Job", "HelmRelease"} <= {
        o["kind"] for o in native
    }
    if namespace is None:
        assert sorted(synthesised, key=_key) == sorted(native, key=_key)
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
        assert sorted(cluster, key=_key) == sorted(
            [o for o in native if "namespace" not in o["metadata"]], key=_key
        )


@needs_node
def test_the_construct_refuses_a_typo_with_the_valid_waves(reference: Platform) -> None:
    cdk8s = pytest.importorskip("cdk8s")
    from gpuplatform.cdk8s import WaveObjects

    chart = cdk8s.Chart(cdk8s.App(), "gpu")
    with pytest.raises(InputError, match=r"has no wave 'pilot' \(waves: baseline, pilot-pool, "):
        WaveObjects(chart, "wave", platform=reference, wave="pilot", engine="argocd")


def test_core_does_not_import_cdk8s() -> None:
    import subprocess
    import sys

    code = "import sys, gpuplatform.cli, gpuplatform.commands.synth; print('cdk8s' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
