"""What every reviewed entry of a data file (a fidelity classification, a known defect) means by "it holds here":
a person wrote it for these paths, on these Gym versions, and said why."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable


def holds(globs: Iterable[str], reason: str, gyms: Iterable[str], path: str, gym: str) -> bool:
    """The entry names the path (or a glob of it), on this Gym version (none listed: every one), with a reason:
    without one it says nothing, as an ack without one acknowledges nothing."""
    listed = tuple(gyms)
    return (
        bool(reason.strip())
        and any(fnmatch.fnmatchcase(path, glob) for glob in globs)
        and (not listed or gym in listed)
    )
