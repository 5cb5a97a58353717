"""What an environment's paths exercise: per family of forms (forms.toml [families]) and per call the fault matrix
fails (faults.toml [[matrix.call]]), how many paths — what `gymgate cases list` shows per environment (with why a
family has none: gymgate.listing), and report.md per run. Paths are counted by their names, so planned paths and
recorded ones read the same."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from gymgate.faults.catalogue import catalogue as fault_catalogue
from gymgate.pathid import PathId
from gymgate.variants.forms import catalogue as form_catalogue
from gymgate.variants.forms import families

FAULTS = "faults"  # a fault family's prefix: "faults: <call>"


@dataclass
class Coverage:
    """One environment's paths by family: how many, and why a family has none (when a plan says)."""

    env: str
    counts: dict[str, int] = field(default_factory=dict)
    why_not: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"env": self.env, "paths": self.counts, "not_exercised": self.why_not}


def family_names() -> list[str]:
    """Every family, in the order reports show them: the forms' families, then the fault matrix's calls."""
    calls = dict.fromkeys(_call_of(f) for f in fault_catalogue().faults)
    return [*families(), *(f"{FAULTS}: {call}" for call in calls)]


def _call_of(fault) -> str:
    return {("policy", 0): "first call", ("judge", 0): "judge"}.get((fault.caller, fault.call), "later turn")


def family_of(path: str) -> str | None:
    """The family a path's name puts it in (None: an original path, not a variant or a fault)."""
    pid = PathId(path)
    form, fault = pid.part("form"), pid.part("fault")
    if form:
        kind = next((f.kind for f in form_catalogue()[0] if f.name == form), None)
        return next((name for name, kinds in families().items() if kind in kinds), None)
    if fault:
        found = next((f for f in fault_catalogue().faults if f.name == fault), None)
        return f"{FAULTS}: {_call_of(found)}" if found else None
    return None


def count(env: str, paths: Iterable[str]) -> Coverage:
    """How many of these paths each family has (every family named, 0 where none)."""
    found = Coverage(env, dict.fromkeys(family_names(), 0))
    for path in paths:
        family = family_of(path)
        if family is not None:
            found.counts[family] += 1
    return found
