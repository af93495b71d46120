"""Legacy manifests -> claim-based manifests (`gpuplatform convert`)."""
