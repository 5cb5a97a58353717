"""Gym's recorded rollouts (`resources_servers/<server>/data/example_rollouts.jsonl`): what real models wrote for
the rows an environment ships, what the tools returned and what the verifier gave. read.py turns a Gym's files
into Recording values; fidelity.py holds the reviewed reasons a recording does not reproduce; paths/replayed.py
makes each recording a path."""
