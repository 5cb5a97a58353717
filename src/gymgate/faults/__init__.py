"""Faults a real model server has (refused or failed calls, bodies cut or not the schema), declared as data
(faults.toml) and injected by the endpoint on one chosen call of a path: how Gym handles each is part of its
contract (acceptance/faulted.py judges it)."""
