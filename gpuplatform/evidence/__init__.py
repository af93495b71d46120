"""Snapshots of a cluster judged by the gate programs (their Python twins a cache), and the register."""
