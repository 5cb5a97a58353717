"""A stored run judged alone: its paths' attempts diffed with each other (stability.py), the verdict asked of
gymgate.verdict (which never imports compare/)."""

from __future__ import annotations

from gymgate.compare.stability import disagreement
from gymgate.runfolder import RunFolder
from gymgate.verdict import RunVerdict, run_verdict


def judge_run(run: RunFolder, pytest_code: int, expected: list[str] | None = None) -> RunVerdict:
    """One stored run judged alone: 0 clean, 1 failures or disagreeing attempts, 3 nothing judged."""
    records = list(run.records(expected).values())
    found = {r.path: disagreement(r.attempt_records()) for r in records}
    unstable = {path: d.line("this ref") for path, d in found.items() if d is not None}
    return run_verdict(records, pytest_code, run.lifecycle_failures(), unstable)
