"""The fake kubectl of the snapshot tests, for snapshots that capture Helm releases."""

from tests.evidence.test_snapshot import fake_kubectl

__all__ = ["fake_kubectl"]
