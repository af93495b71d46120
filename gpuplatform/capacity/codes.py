"""The capacity codes (GP280-GP282) and their texts, for `explain` and `--allow`: no model imported."""

from __future__ import annotations

__all__ = ["CAPACITY_CODES", "TIGHT_USE"]

#: A moment is tight when an allocator that serves demand has this share of its capacity in use.
TIGHT_USE = 0.9

#: code -> (severity, title, explanation), for `gpuplatform explain`.
CAPACITY_CODES: dict[str, tuple[str, str, str]] = {
    "GP280": (
        "error",
        "a wave whose workloads do not fit",
        "Placing the wave's declared workloads on the modelled fleet failed: unmigrated ones on device-plugin "
        "GPUs, migrated ones through their claims (with Kubernetes' allocator), in the wave, while the pools "
        "the transition moves are drained, and in a drain wave whose pools its runbook has drained. A "
        "workload with nowhere to run is an outage, so `check` and `synth` refuse it (and `simulate` proves "
        "the same wave unsafe: `workload-disrupted`); `--allow GP280` overrides it, recorded in the lock file. "
        "Run `gpuplatform capacity STACK --wave W` for the first workload that does not fit and why; add "
        "nodes, move fewer pools at once, or move workloads earlier.",
    ),
    "GP281": (
        "info",
        "a tight wave",
        f"The wave fits, but an allocator that serves demand has at least {TIGHT_USE:.0%} of its capacity "
        "in use; a node failure or a surge will leave pods pending.",
    ),
    "GP282": (
        "warning",
        "a wave that fits only if a provisioner adds nodes without a declared limit",
        "Placing the wave's workloads needs nodes that a provisioner-managed pool has to add, and the "
        "spec declares no limit the tool can evaluate (`provisioner.maxNodes`, or Karpenter `limits` on "
        "`nodes` or `nvidia.com/gpu`; limits on cpu or memory depend on instance types). Whether it fits "
        "depends on the provisioner. Declare the pool's limit to get a verdict.",
    ),
}
