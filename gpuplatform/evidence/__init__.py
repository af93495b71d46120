"""Snapshots of a cluster, judged by the gate programs (their Python twins offline), and the register."""
