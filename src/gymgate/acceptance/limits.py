"""How long and how often one path runs: the attempts per path, the rollout deadline and how a path's own deadline
is derived from what the baseline measured. Read by the session (runner/path.py) and the harness alike, so it
imports nothing heavy."""

from __future__ import annotations

import math
from collections.abc import Iterable

from gymgate.outcomes import FAIL, PASS
from gymgate.runfolder.record import PathRecord

# A rollout's deadline when nothing else is known is --path-timeout, and the attempts of each path in one Gym are
# --attempts (gymgate.options declares both; docs/benchmarks.md "attempts" says why two).
# A path's own deadline: this multiple of the slowest rollout the baseline measured for it, never below the floor
# (a loaded CI machine runs a 3 s rollout in well under 30 s; a hang is then judged in a fraction of 180 s).
DEADLINE_MULTIPLE = 10.0
DEADLINE_FLOOR_S = 30.0
ROLLOUT_TIMING = "run_rollouts"  # the record's timing of the rollout itself (consumer/rollout.py)


def derived_deadline(measured_s: float) -> float:
    return float(max(DEADLINE_FLOOR_S, math.ceil(DEADLINE_MULTIPLE * measured_s)))


def derive_deadlines(records: Iterable[PathRecord]) -> dict[str, float]:
    """Each path's deadline from the baseline's records: only paths whose every attempt there ran to its end
    (PASS or FAIL) and measured its rollout; any other path keeps --path-timeout."""
    deadlines = {}
    for record in records:
        attempts = record.attempt_records()
        times = [a.timings.get(ROLLOUT_TIMING) for a in attempts]
        if any(a.outcome not in (PASS, FAIL) for a in attempts) or any(t is None for t in times):
            continue
        deadlines[record.path] = derived_deadline(max(times))
    return deadlines
