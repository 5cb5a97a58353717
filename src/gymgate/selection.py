"""Which entries of a declared catalogue (faults.toml, forms.toml) a run uses: none, the default set's (the entries
cheap enough for every bump), or every declared one — one meaning for `--faults` and `--variants`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, TypeVar

NONE, DEFAULT, ALL = "none", "default", "all"
SELECTIONS = (NONE, DEFAULT, ALL)


class Declared(Protocol):
    @property
    def default(self) -> bool: ...


T = TypeVar("T", bound=Declared)


def chosen(entries: Iterable[T], selection: str, option: str) -> tuple[T, ...]:
    """The entries `selection` (one of SELECTIONS, given as `option`) picks, in their declared order."""
    if selection not in SELECTIONS:
        raise ValueError(f"{option} {selection!r}: expected one of {', '.join(SELECTIONS)}")
    return () if selection == NONE else tuple(e for e in entries if selection == ALL or e.default)
