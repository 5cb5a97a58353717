"""The kinds of rollout path, each a value with behaviour (protocol.PathKind) in a module of its own, found through
the declarations in gymgate/pathkinds.toml: adding a kind is one entry there and one module here.

plan.py lists a selection's paths kind by kind; gymgate.runner runs one path as a fixed sequence of calls into its
kind; the comparison and the reports read what a path's id says of its kind (gymgate.pathid)."""

from __future__ import annotations

import importlib
from functools import cache

from gymgate.kinds.protocol import PathKind
from gymgate.pathid import PathId
from gymgate.pathid import kinds as declared


def kinds() -> tuple[PathKind, ...]:
    """Every declared kind's behaviour, in plan order. The modules are found by their declared names (the registry
    is the declaration file, not an import list), each once, and checked to be the kind they are declared as."""
    return _behaviours(declared())


@cache
def _behaviours(names_of_kinds: tuple) -> tuple[PathKind, ...]:
    """Loaded once per set of declarations (a test that declares another kind gets its own)."""
    found = []
    for names in names_of_kinds:
        kind = importlib.import_module(names.behaviour).KIND
        if kind.name != names.name:
            raise ValueError(f"{names.behaviour}.KIND is {kind.name!r}, declared as {names.name!r}")
        found.append(kind)
    return tuple(found)


def kind_of(path: PathId | str) -> PathKind:
    """The behaviour of the kind a path's name is of."""
    name = PathId(path).kind.name
    return next(k for k in kinds() if k.name == name)
