"""The declarative inputs of the rollout paths, read from cases/<env>.toml: which environments run and how their
Gym is configured (environments.py), and each path's pinned row, scripted model and expected verdict (case.py)."""
