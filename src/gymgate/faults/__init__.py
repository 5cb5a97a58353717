"""Faults a real model server has (refused or failed calls, bodies cut or not the schema), declared as data
(faults.toml) and injected by the endpoint on one chosen call of a path: how Gym handles each is part of its
contract (acceptance/faulted.py judges it)."""

from gymgate.selection import ALL, DEFAULT, NONE, SELECTIONS  # which faults a run's fault paths come from (--faults)

__all__ = ["ALL", "DEFAULT", "NONE", "SELECTIONS"]
