"""Facts about the Helm charts the platform installs, per chart version (see `facts.py`)."""
