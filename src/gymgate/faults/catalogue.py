"""The fault catalogue (faults.toml) read and checked once: the matrix of what fails × how long × whose call, each
cell reviewed, generated or listed as not run with why."""

from __future__ import annotations

import fnmatch
import tomllib
from dataclasses import asdict, dataclass, replace
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
    delay_s: float | None = None  # a slow answer's delay
    reviewed: bool = True  # a [[fault]] entry (false: a cell generated from the matrix, with --faults all only)

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
        hidden = ("why", "default", "reviewed")
        return {k: v for k, v in asdict(self).items() if v is not None and k not in hidden}


@dataclass(frozen=True)
class Unrun:
    """A cell of the matrix not run, and why."""

    name: str
    why: str


@dataclass(frozen=True)
class Catalogue:
    faults: tuple[Fault, ...]  # every cell that runs with --faults all, in the matrix's order
    unrun: tuple[Unrun, ...]  # every other cell
    max_attempts: int


REVIEWED_KEYS = {"name", "cells", "why", "absorb", "default"}


def _cells(matrix: dict[str, Any], file: str) -> dict[str, dict[str, Any]]:
    """Every cell of the matrix by name, in order (call, kind, times), as the Fault fields it stands for."""
    cells: dict[str, dict[str, Any]] = {}
    for dim in ("call", "kind", "times"):
        names = [d.get("name") for d in matrix.get(dim, [])]
        if not names or len(set(names)) != len(names) or not all(isinstance(n, str) and n for n in names):
            raise ValueError(f"{file}: [[matrix.{dim}]] must name each of its entries once")
    for call in matrix["call"]:
        for kind in matrix["kind"]:
            for times in matrix["times"]:
                name = f"{call['name']}_{kind['name']}_{times['name']}"
                cells[name] = {
                    "name": name,
                    "caller": call.get("caller"),
                    "call": call.get("call"),
                    "kind": kind.get("kind"),
                    "times": times.get("times"),
                    "retry_after": kind.get("retry_after"),
                    "delay_s": kind.get("delay_s"),
                    "why": f"{kind.get('why', kind['name'])}, {times.get('why', times['name'])}, "
                    f"{call.get('why', call['name'])}",
                }
    return cells


def _fault(cell: dict[str, Any], entry: dict[str, Any] | None, file: str) -> Fault:
    reviewed = entry is not None
    fault = Fault(
        **cell,
        reviewed=reviewed,
        default=bool(entry.get("default", True)) if reviewed else False,
        absorb=bool(entry.get("absorb", False)) if reviewed else False,
    )
    if reviewed and entry.get("why"):
        fault = replace(fault, why=str(entry["why"]))
    problems = []
    if reviewed:
        problems += [
            f"key `{k}` (a reviewed cell says only {', '.join(sorted(REVIEWED_KEYS))})"
            for k in sorted(set(entry) - REVIEWED_KEYS)
        ]
    if fault.caller not in (POLICY, JUDGE):
        problems.append(f"caller {fault.caller!r} (policy or judge)")
    if fault.kind not in KINDS:
        problems.append(
            f"kind {fault.kind!r} ({', '.join(KINDS)}; a kind the endpoint cannot make has every cell in [[unrun]])"
        )
    if not (fault.times == EVERY or (isinstance(fault.times, int) and fault.times >= 1)):
        problems.append(f"times {fault.times!r} (a count >= 1 or {EVERY!r})")
    if not isinstance(fault.call, int) or fault.call < 0:
        problems.append(f"call {fault.call!r} (0 for the first)")
    if fault.absorb and fault.permanent:
        problems.append("absorb (a fault that never ends cannot be absorbed)")
    if not fault.name.replace("_", "").isalnum():
        problems.append(f"name {fault.name!r} (letters, digits, _: it names a path)")
    if problems:
        raise ValueError(f"{file}: fault {fault.name!r}: bad {'; '.join(problems)}")
    return fault


@cache
def catalogue(path: Path = CATALOGUE) -> Catalogue:
    """Every cell of the matrix: the faults that run (reviewed or generated) and the ones that do not, with why;
    and the attempts of one call beyond which Gym's retries count as unbounded."""
    data = tomllib.loads(path.read_text())
    cells = _cells(data.get("matrix", {}), path.name)
    entries: dict[str, dict[str, Any]] = {}
    for entry in data.get("fault", []):  # the first entry that names a cell (by name, or `cells` globs) reviews it
        name, globs = entry.get("name"), entry.get("cells")
        if (name is None) == (globs is None):
            raise ValueError(f"{path.name}: a [[fault]] names one cell (`name`) or several (`cells`): {entry!r}")
        if name is not None and name not in cells:
            raise ValueError(f"{path.name}: fault {name!r} is no cell of the matrix (<call>_<kind>_<times>)")
        if name is not None and name in entries:
            raise ValueError(f"{path.name}: fault {name!r} appears twice")
        matched = [name] if name is not None else [n for n in cells if any(fnmatch.fnmatchcase(n, g) for g in globs)]
        if not matched:
            raise ValueError(f"{path.name}: [[fault]] cells {globs!r} match no cell")
        for cell in matched:
            entries.setdefault(cell, {k: v for k, v in entry.items() if k != "cells"} | {"name": cell})
    unrun: dict[str, str] = {}
    for rule in data.get("unrun", []):
        matched = [n for n in cells if any(fnmatch.fnmatchcase(n, g) for g in rule.get("cells", []))]
        if not matched or not str(rule.get("why", "")).strip():
            raise ValueError(f"{path.name}: [[unrun]] {rule.get('cells')!r} must match cells and say why")
        for name in matched:
            if name in entries:
                raise ValueError(f"{path.name}: fault {name!r} is both reviewed and listed as not run")
            unrun.setdefault(name, str(rule["why"]))
    faults = tuple(_fault(cell, entries.get(name), path.name) for name, cell in cells.items() if name not in unrun)
    return Catalogue(faults, tuple(Unrun(n, w) for n, w in unrun.items()), int(data["max_attempts"]))


def selected(selection: str) -> tuple[Fault, ...]:
    """The faults a run's fault paths come from (--faults: one of SELECTIONS)."""
    return chosen(catalogue().faults, selection, "--faults")
