"""A cited model of the controllers that replays every transition on the rendered objects."""
