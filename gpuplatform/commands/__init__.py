"""What synth, check, diff and the wave objects do: the orchestration of the layers below them."""
