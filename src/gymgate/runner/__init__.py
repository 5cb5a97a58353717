"""Running one path (path.py): its row through the RL consumer boundary, the real Gym services and the rollout,
then every check, into one record — a fixed sequence of calls into the path's kind (gymgate.kinds), the same for
every kind."""
