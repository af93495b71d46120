"""Policy rules (GPnnn) over the spec and its plan, and the explanation of each."""
