"""Loading stacks, specs and overlays from files, with every problem located."""
