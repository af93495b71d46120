"""Platform -> the desired state of each wave, its gates, and the steps of every transition."""
