"""How long one node's DRA kubelet plugin may take to come up, as the chart bounds it.

Every chart version in shared/reference/charts gives the kubelet plugin's containers a startup
probe of 600 s before the kubelet restarts them (`templates/kubeletplugin.yaml` `startupProbe`:
dra-driver-nvidia-gpu 0.4.1 `failureThreshold: 600` x `periodSeconds: 1`, nvidia-dra-driver-gpu
25.12.0 `60` x `10`). A rollout node that is still inside that budget is healthy, not failed.
"""

from __future__ import annotations

__all__ = ["KUBELET_PLUGIN_STARTUP_SECONDS"]

#: failureThreshold x periodSeconds of the kubelet plugin's startup probe (held to the charts by tests).
KUBELET_PLUGIN_STARTUP_SECONDS = 600
