"""Brownfield adoption: the running Helm releases, and importing their values into a spec."""
