"""Wave state -> Kubernetes objects (plain dicts), runbooks and hand-offs, one module per family."""
