"""Faults a real model server has (refused or failed calls, bodies cut or not the schema), declared as data
(faults.toml) and injected by the endpoint on one chosen call of a path: how Gym handles each is part of its
contract (acceptance/faulted.py judges it)."""

from gymgate.selection import ALL, DEFAULT, NONE, SELECTIONS  # which faults a run's fault paths come from (--faults)

__all__ = ["ALL", "DEFAULT", "NONE", "PREFIX", "SELECTIONS", "replays_case"]
PREFIX = "fault."  # a fault path's name: fault.<fault name>


def replays_case(mode: str) -> bool:
    """A fault path runs its environment's accepted case again: what the model receives there is the accepted
    path's (a change reviewed on the accepted path is the same change on its fault paths)."""
    return mode.startswith(PREFIX)
