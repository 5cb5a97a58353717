"""Where paths come from. A path is one value (spec.PathSpec: its row, the model's script, what it must come to)
whichever source produced it: a hand-written case (handwritten.py: accepted and rejected) or a rollout Gym
recorded against a real model (replayed.py). plan.py lists the paths of a selection; everything downstream (the
session's items, checks, records, comparison, reports) reads PathSpecs and path ids and never asks where a path
came from but to show it."""
