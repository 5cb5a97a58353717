"""Replay fidelity per environment, from a run's records: how many recorded rollouts reproduced on this Gym, how
many did not and why (a reviewed class, not replayable here, or unexplained: a failure), e.g.
`mcqa: 4/5 reproduce (1 verifier-changed)`."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from gymgate.runfolder import PathRecord

UNREPLAYABLE, UNEXPLAINED, NOT_JUDGED = "not replayable here", "unexplained", "not judged"


@dataclass
class EnvFidelity:
    env: str
    replays: int = 0
    reproduce: int = 0
    others: Counter = field(default_factory=Counter)  # why the rest did not: a class, or one of the three above

    def line(self) -> str:
        why = ", ".join(f"{n} {k}" for k, n in sorted(self.others.items()))
        return f"{self.env}: {self.reproduce}/{self.replays} reproduce" + (f" ({why})" if why else "")

    def to_json(self) -> dict:
        return {"replays": self.replays, "reproduce": self.reproduce, "others": dict(self.others)}


def fidelity(records: list[PathRecord]) -> dict[str, EnvFidelity]:
    """Per environment with replayed paths, in name order."""
    found: dict[str, EnvFidelity] = {}
    for record in sorted(records, key=lambda r: r.path):
        if not record.recording and "unreplayable" not in record.fidelity:
            continue
        env = found.setdefault(record.env, EnvFidelity(record.env))
        env.replays += 1
        if record.fidelity.get("reproduces"):
            env.reproduce += 1
        else:
            env.others[_why(record)] += 1
    return found


def _why(record: PathRecord) -> str:
    if "unreplayable" in record.fidelity:
        return UNREPLAYABLE
    classified = record.fidelity.get("classified")
    if classified:
        return str(classified.get("class"))
    return UNEXPLAINED if record.fidelity else NOT_JUDGED


def fidelity_lines(records: list[PathRecord]) -> list[str]:
    return [f.line() for f in fidelity(records).values()]
