"""Kueue, one concept in one place: the spec's queues (`model`), each wave's quotas (`plan`), the
queue objects and the configuration hand-off (`render`, `runbook`), reading a cluster's Kueue
(`evidence`), capacity and the simulated admission (`capacity`, `simulate`) and the GP rules
(`rules`). Each module plays the part of the layer it names (`tests/test_layers.py` `CONCEPTS`):
import them by name; this module imports nothing.
"""
