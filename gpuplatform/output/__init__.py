"""Objects -> files and nothing else: deterministic YAML, validation, the lock file, the crash-safe swap."""
