"""Where a path runs and is judged: one Gym row through the RL consumer boundary, checked exactly."""
