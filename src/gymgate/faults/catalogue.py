"""The fault catalogue (faults.toml) read and checked once: what fails, on which call, how many times."""

from __future__ import annotations

import tomllib
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any

from gymgate.endpoint.faults import KINDS
from gymgate.endpoint.script import Script
from gymgate.endpoint.server import JUDGE, POLICY
from gymgate.pathid import kind_named
from gymgate.selection import chosen

CATALOGUE = Path(__file__).with_name("faults.toml")
EVERY = "every"  # `times`: every attempt of the call fails


@dataclass(frozen=True)
class Fault:
    name: str
    caller: str
    call: int
    kind: str
    times: int | str  # attempts that fail before the call is answered, or EVERY
    why: str = ""
    retry_after: int | None = None
    absorb: bool = False  # every Gym is expected to try again and get the answer (a transient fault)
    default: bool = True  # in the default set (false: only with --faults all, e.g. one that hangs known releases)

    @property
    def path_name(self) -> str:
        return kind_named("fault").format(fault=self.name)

    @property
    def permanent(self) -> bool:
        return self.times == EVERY

    def fails(self, attempt: int) -> bool:
        """Whether the call's attempt `attempt` (0: the first) fails."""
        return self.permanent or attempt < int(self.times)

    def applies(self, script: Script) -> bool:
        """Only a call the path makes: the judge's when the case scripts a verdict, a later turn when it has one."""
        if self.caller == JUDGE:
            return bool(script.judge_verdicts)
        return self.call < len(script.turns)

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None and k not in ("why", "default")}


def _fault(entry: dict[str, Any]) -> Fault:
    fault = Fault(**entry)
    problems = []
    if fault.caller not in (POLICY, JUDGE):
        problems.append(f"caller {fault.caller!r} (policy or judge)")
    if fault.kind not in KINDS:
        problems.append(f"kind {fault.kind!r} ({', '.join(KINDS)})")
    if not (fault.times == EVERY or (isinstance(fault.times, int) and fault.times >= 1)):
        problems.append(f"times {fault.times!r} (a count >= 1 or {EVERY!r})")
    if not isinstance(fault.call, int) or fault.call < 0:
        problems.append(f"call {fault.call!r} (0 for the first)")
    if fault.absorb and fault.permanent:
        problems.append("absorb (a fault that never ends cannot be absorbed)")
    if not fault.name.replace("_", "").isalnum():
        problems.append(f"name {fault.name!r} (letters, digits, _: it names a path)")
    if problems:
        raise ValueError(f"{CATALOGUE.name}: fault {fault.name!r}: bad {'; '.join(problems)}")
    return fault


@cache
def catalogue(path: Path = CATALOGUE) -> tuple[tuple[Fault, ...], int]:
    """Every declared fault, and the attempts of one call beyond which Gym's retries count as unbounded."""
    data = tomllib.loads(path.read_text())
    faults = tuple(_fault(entry) for entry in data.get("fault", []))
    names = [f.name for f in faults]
    if len(set(names)) != len(names):
        raise ValueError(f"{path.name}: a fault name appears twice")
    return faults, int(data["max_attempts"])


def selected(selection: str) -> tuple[Fault, ...]:
    """The faults a run's fault paths come from (--faults: one of SELECTIONS)."""
    return chosen(catalogue()[0], selection, "--faults")
