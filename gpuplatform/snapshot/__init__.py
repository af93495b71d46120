"""Cluster snapshots, one concept in one place: taking one with kubectl (`take`, `kubectl`), the
folder written whole or not at all (`write`), its manifest (`manifest`), reading it back
(`read`, with `shapes` checking the fields every command reads) and the fields the gate programs
read (`project`). Each module plays the part of the layer it names (`tests/test_layers.py`
`CONCEPTS`): import them by name; this module imports nothing.
"""
