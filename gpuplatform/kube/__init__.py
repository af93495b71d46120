"""Kubernetes' own semantics the layers above share: node selectors, taints and tolerations."""
