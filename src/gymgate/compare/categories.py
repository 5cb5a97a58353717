"""The one table from a path's outcomes on the baseline and the candidate to a comparison category.

A record is first reduced to a *label*: PASS, FAIL, ERROR (blamed on Gym), ERROR(harness) (gymgate's own fault:
it says nothing about Gym), NO_RECORD (an expected path that left no record), SKIP (not in that Gym), BROKEN (the
ref could not be locked, built or started at all), or None (the run was not asked for that path).

The table fails closed: a path that passes on the baseline and fails, errors, left no record or is absent (its
environment's config or data gone) on the candidate is regressed. Harness errors are not evidence either way: a
side whose every attempt is a harness error makes the path unjudged (exit 2, rerun). A side is flaky only when some
attempt passed and some did not; a side that never passed is judged by its first informative attempt, whatever mix
of FAIL / ERROR / BROKEN / no record its attempts show (a path that never passes is never flaky, and never exit 0).
A candidate whose attempts disagree (flaky, or nondeterministic: compare/stability.py) where the baseline's agree is
regressed; a baseline that disagrees with itself makes the path flaky (named, exit 0).

A path that passes on both refs is "same-pass" unless the bump changed what its model received or what RL trains
on (a contract change, compare/observation.py) and no reviewed acknowledgement covers it: then it is "changed",
which fails the gate like a regression (compare/runs.py decides it from the two observations).
"""

from __future__ import annotations

from gymgate.outcomes import BROKEN, ERROR, FAIL, HARNESS, PASS, SKIP
from gymgate.runfolder import PathRecord

HARNESS_ERROR = "ERROR(harness)"
NO_RECORD = "NO_RECORD"
LABELS = (PASS, FAIL, ERROR, HARNESS_ERROR, NO_RECORD, SKIP, BROKEN, None)

REGRESSED = "regressed"
FIXED = "fixed"
SAME_PASS = "same-pass"
CHANGED = "changed"  # passes on both, but with an unacknowledged contract change
SAME_FAIL = "same-fail"
UNJUDGED = "unjudged"  # a harness error, or a path only one run was asked for: rerun
FLAKY = "flaky"
BROKEN_CATEGORY = "broken"
SKIPPED = "skipped"
NEW_PATH = "new path"
REMOVED_PATH = "removed path"  # failing on the baseline, absent from the candidate

CATEGORIES = (
    REGRESSED,
    BROKEN_CATEGORY,
    CHANGED,
    UNJUDGED,
    FLAKY,
    FIXED,
    NEW_PATH,
    REMOVED_PATH,
    SAME_FAIL,
    SAME_PASS,
    SKIPPED,
)
# Categories a reviewer must look at; the "same" buckets are collapsed in reports.
ACTIONABLE = (REGRESSED, BROKEN_CATEGORY, CHANGED, UNJUDGED, FLAKY, FIXED, NEW_PATH, REMOVED_PATH)
FAILING = (REGRESSED, BROKEN_CATEGORY, CHANGED)  # exit 1
CANNOT_JUDGE = (UNJUDGED,)  # exit 2 unless something failed

_ROW_PASS = {
    PASS: SAME_PASS,
    FAIL: REGRESSED,
    ERROR: REGRESSED,
    HARNESS_ERROR: UNJUDGED,
    NO_RECORD: REGRESSED,
    SKIP: REGRESSED,  # the environment's config or data is gone: an RL framework training on it breaks
    BROKEN: BROKEN_CATEGORY,
    None: UNJUDGED,
}
_ROW_FAILING = {
    PASS: FIXED,
    FAIL: SAME_FAIL,
    ERROR: SAME_FAIL,
    HARNESS_ERROR: UNJUDGED,
    NO_RECORD: SAME_FAIL,
    SKIP: REMOVED_PATH,
    BROKEN: BROKEN_CATEGORY,
    None: UNJUDGED,
}
_ROW_ABSENT = {
    PASS: NEW_PATH,
    FAIL: REGRESSED,
    ERROR: REGRESSED,
    HARNESS_ERROR: UNJUDGED,
    NO_RECORD: REGRESSED,
    SKIP: SKIPPED,
    BROKEN: BROKEN_CATEGORY,
    None: SKIPPED,
}
#  baseline label -> candidate label -> category
TABLE: dict[str | None, dict[str | None, str]] = {
    PASS: _ROW_PASS,
    FAIL: _ROW_FAILING,
    ERROR: _ROW_FAILING,
    HARNESS_ERROR: {c: (BROKEN_CATEGORY if c == BROKEN else UNJUDGED) for c in LABELS},
    NO_RECORD: {c: (BROKEN_CATEGORY if c == BROKEN else UNJUDGED) for c in LABELS},
    SKIP: _ROW_ABSENT,
    BROKEN: {c: (FIXED if c == PASS else BROKEN_CATEGORY) for c in LABELS},
    None: _ROW_ABSENT,
}


def label(record: PathRecord | None) -> str | None:
    """What one record says about Gym, as the table reads it."""
    if record is None:
        return None
    outcome = record.outcome
    if record.missing:
        return NO_RECORD
    if outcome == ERROR and record.blame == HARNESS:
        return HARNESS_ERROR
    if outcome in (PASS, FAIL, ERROR, SKIP, BROKEN):
        return outcome
    return ERROR  # an outcome this version does not know is never a pass


def informative(history: list[str | None]) -> list[str | None]:
    """The attempts that say something about Gym: harness errors are dropped (unless nothing else is left)."""
    kept = [h for h in history if h != HARNESS_ERROR]
    return kept or history


def mixed(history: list[str | None]) -> bool:
    """Some informative attempt passed and some did not: flaky. Attempts that disagree only on how they failed
    (a FAIL, then an ERROR) are not flaky: the path never passed."""
    kept = set(informative(history))
    return PASS in kept and len(kept) > 1


def categorize(
    baseline: str | None,
    candidate: str | None,
    attempts: list[str | None] | None = None,
    baseline_attempts: list[str | None] | None = None,
    unstable: tuple[bool, bool] = (False, False),
) -> str:
    """The category of one path from its labels. `attempts` / `baseline_attempts` are each side's labels over all
    its attempts (the first included); `unstable` says whether each side's attempts disagreed (baseline, candidate;
    compare/stability.py: flaky or nondeterministic — mixed labels count as unstable here too).
    A candidate that disagrees with itself where the baseline did not is regressed: the bump made the path
    unreliable for whoever trains on it. A baseline that disagrees with itself makes the path flaky (named, exit 0):
    the bump did not cause it."""
    base_unstable = unstable[0] or mixed(baseline_attempts or [baseline])
    cand_unstable = unstable[1] or mixed(attempts or [candidate])
    if cand_unstable and not base_unstable:
        return REGRESSED
    if base_unstable:
        return FLAKY
    sides = [
        informative(history or [first])[0] for first, history in ((baseline, baseline_attempts), (candidate, attempts))
    ]
    try:
        return TABLE[sides[0]][sides[1]]
    except KeyError:
        raise ValueError(f"not a label pair: {sides[0]!r} -> {sides[1]!r}") from None


def flaky_side(baseline_unstable: bool, candidate_unstable: bool) -> str:
    """Which ref of a flaky path disagreed with itself: "baseline" or "both" (the candidate alone is regressed)."""
    return "both" if baseline_unstable and candidate_unstable else "baseline"
