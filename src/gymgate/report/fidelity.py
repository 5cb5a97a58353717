"""Replay fidelity per environment, from a run's records: how many recorded rollouts reproduced on this Gym, how
many did not and why (a reviewed class, not replayable here, or unexplained: a failure), e.g.
`mcqa: 4/5 reproduce (1 verifier-changed)`."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from gymgate.errors import UsageError
from gymgate.runfolder import PathRecord, RunFolder
from gymgate.runfolder.folder import stored_runs

UNREPLAYABLE, UNEXPLAINED, NOT_JUDGED = "not replayable here", "unexplained", "not judged"


@dataclass
class EnvFidelity:
    env: str
    ran_from: str = ""  # an environment without a case: the Gym configuration it ran from
    replays: int = 0
    reproduce: int = 0
    others: Counter = field(default_factory=Counter)  # why the rest did not: a class, or one of the three above

    def line(self) -> str:
        why = ", ".join(f"{n} {k}" for k, n in sorted(self.others.items()))
        return f"{self.env}: {self.reproduce}/{self.replays} reproduce" + (f" ({why})" if why else "")

    def to_json(self) -> dict:
        found = {"replays": self.replays, "reproduce": self.reproduce, "others": dict(self.others)}
        return {**found, "ran_from": self.ran_from} if self.ran_from else found


def fidelity(records: list[PathRecord]) -> dict[str, EnvFidelity]:
    """Per environment with replayed paths, in name order."""
    found: dict[str, EnvFidelity] = {}
    for record in sorted(records, key=lambda r: r.path):
        if not record.recording and "unreplayable" not in record.fidelity:
            continue
        env = found.setdefault(record.env, EnvFidelity(record.env))
        env.ran_from = env.ran_from or str(record.recording.get("ran_from", ""))
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


def measured(base: Path, digest: str) -> tuple[RunFolder | None, dict[str, EnvFidelity]]:
    """The newest complete stored run of the Gym with this digest under `base`, and its fidelity per environment
    (what `gymgate cases list` shows next to what a Gym ships)."""
    newest: tuple[float, RunFolder] | None = None
    for run in stored_runs(base):
        try:
            mark = run.mark()
        except UsageError:  # a damaged or foreign folder is passed over
            continue
        if mark is None or not mark.complete or run.source().get("digest") != digest:
            continue
        if newest is None or (mark.finished or 0) > newest[0]:
            newest = (mark.finished or 0, run)
    if newest is None:
        return None, {}
    return newest[1], fidelity(list(newest[1].records().values()))


def fidelity_columns(
    sides: list[tuple[str, list[PathRecord]]],
) -> tuple[list[str], list[tuple[str, list[str]]], list[tuple[str, int, int]]]:
    """A comparison's fidelity, one column per ref: the refs' labels, one row per environment (its fidelity on each
    ref, "—" where it replayed nothing), and each ref's totals (label, reproduce, replays)."""
    found = [(label, fidelity(records)) for label, records in sides]
    envs = sorted({env for _, per_env in found for env in per_env})
    ran_from = {env: f.ran_from for _, per_env in found for env, f in per_env.items() if f.ran_from}
    rows = [
        (
            f"{env} (ran from {ran_from[env]})" if env in ran_from else env,
            [per_env[env].line().split(": ", 1)[1] if env in per_env else "—" for _, per_env in found],
        )
        for env in envs
    ]
    totals = [
        (label, sum(f.reproduce for f in per_env.values()), sum(f.replays for f in per_env.values()))
        for label, per_env in found
        if per_env
    ]
    return [label for label, _ in found], rows, totals
