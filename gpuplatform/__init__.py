"""gpuplatform: move NVIDIA GPU scheduling from the device plugin to DRA, in waves, through GitOps."""

__version__ = "0.1.0"
