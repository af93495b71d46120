"""Chart facts: lookup by version, kinds under values toggles, reads, defaults."""

from __future__ import annotations

from gpuplatform.charts.facts import MISSING, chart_facts, leaf_paths, value_at


def test_lookup_by_version_says_how_close_the_facts_are() -> None:
    facts, match = chart_facts("gpu-operator", "26.3.1")
    assert (facts.chart, facts.version, match) == ("gpu-operator", "v26.3.1", "exact")
    assert chart_facts("gpu-operator", "26.3.3")[1] == "minor"
    assert chart_facts("gpu-operator", "25.10.1")[1] == "family"
    dra, match = chart_facts("dra-driver", "0.4.1")
    assert (dra.chart, dra.repository, match) == (
        "dra-driver-nvidia-gpu",
        "oci://registry.k8s.io/dra-driver-nvidia/charts",
        "exact",
    )
    old, _ = chart_facts("dra-driver", "25.12.0")
    assert (old.chart, old.repository) == ("nvidia-dra-driver-gpu", "https://helm.ngc.nvidia.com/nvidia")


def _kinds(values: dict) -> set[tuple[str, str]]:  # type: ignore[type-arg]
    facts, _ = chart_facts("dra-driver", "0.4.1")
    return {(k.kind, k.name) for k in facts.installs(values)}


def test_toggles_add_and_remove_kinds() -> None:
    assert ("Deployment", "") in _kinds({})
    assert ("Deployment", "") not in _kinds({"resources": {"computeDomains": {"enabled": False}}})
    assert ("ValidatingWebhookConfiguration", "") in _kinds({"webhook": {"enabled": True}})
    assert ("ValidatingWebhookConfiguration", "") not in _kinds({})
    # CRDs are installed whatever the values (crds/ folder), by name
    assert ("CustomResourceDefinition", "computedomains.resource.nvidia.com") in _kinds(
        {"resources": {"computeDomains": {"enabled": False}}}
    )


def test_nfd_off_removes_its_crds_and_extra_objects_are_installed_too() -> None:
    facts, _ = chart_facts("gpu-operator", "26.3.1")
    names = {k.name for k in facts.installs({"nfd": {"enabled": False}})}
    assert "nodefeatures.nfd.k8s-sigs.io" not in names and "clusterpolicies.nvidia.com" in names
    extra = {
        "extraObjects": [
            {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "x"}}
        ]
    }
    assert any(k.kind == "PriorityClass" and not k.namespaced for k in facts.installs(extra))


def test_reads_and_defaults() -> None:
    facts, _ = chart_facts("gpu-operator", "26.3.1")
    assert facts.reads_path(("driver", "manager", "env"))
    assert facts.reads_path(("node-feature-discovery", "worker", "tolerations"))
    assert not facts.reads_path(("operator", "defaultRuntime"))
    assert facts.default(("driver", "version")) == "580.126.20"
    assert facts.default(("nope",)) is MISSING


def test_leaf_paths_descend_mappings_only() -> None:
    values = {"a": {"b": 1, "c": [1, 2], "d": {}}, "e.f": {"g": "x"}}
    assert dict(leaf_paths(values)) == {("a", "b"): 1, ("a", "c"): [1, 2], ("a", "d"): {}, ("e.f", "g"): "x"}
    assert value_at(values, ("e.f", "g")) == "x" and value_at(values, ("a", "x")) is MISSING
