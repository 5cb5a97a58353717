"""The one table from a pair of path outcomes (baseline, candidate) to a comparison category.

Outcomes: PASS, FAIL, ERROR (infrastructure: it says nothing about Gym's behaviour), SKIP (not in that Gym),
BROKEN (the ref could not be locked, built or started at all), or None (the path does not exist in that run).
Flakiness is decided by reruns, not by this table: mixed outcomes over attempts are FLAKY whatever the pair.
"""

from __future__ import annotations

PASS, FAIL, ERROR, SKIP, BROKEN = "PASS", "FAIL", "ERROR", "SKIP", "BROKEN"
OUTCOMES = (PASS, FAIL, ERROR, SKIP, BROKEN, None)

REGRESSED = "regressed"
FIXED = "fixed"
SAME_PASS = "same-pass"
SAME_FAIL = "same-fail"
SPURIOUS_REGRESSED = "spurious-regressed"  # the new failure is infrastructure, not Gym
FLAKY = "flaky"
BROKEN_CATEGORY = "broken"
SKIPPED = "skipped"
NEW_PATH = "new path"
REMOVED_PATH = "removed path"

# Categories a reviewer must look at; the "same" buckets are collapsed in reports.
ACTIONABLE = (REGRESSED, BROKEN_CATEGORY, SPURIOUS_REGRESSED, FLAKY, FIXED, NEW_PATH, REMOVED_PATH)

#            candidate:  PASS                FAIL        ERROR               SKIP          BROKEN           None
TABLE: dict[str | None, dict[str | None, str]] = {
    PASS: {
        PASS: SAME_PASS,
        FAIL: REGRESSED,
        ERROR: SPURIOUS_REGRESSED,
        SKIP: REMOVED_PATH,
        BROKEN: BROKEN_CATEGORY,
        None: REMOVED_PATH,
    },
    FAIL: {
        PASS: FIXED,
        FAIL: SAME_FAIL,
        ERROR: SAME_FAIL,
        SKIP: REMOVED_PATH,
        BROKEN: BROKEN_CATEGORY,
        None: REMOVED_PATH,
    },
    ERROR: {
        PASS: FIXED,
        FAIL: REGRESSED,
        ERROR: SAME_FAIL,
        SKIP: REMOVED_PATH,
        BROKEN: BROKEN_CATEGORY,
        None: REMOVED_PATH,
    },
    SKIP: {
        PASS: NEW_PATH,
        FAIL: REGRESSED,
        ERROR: SPURIOUS_REGRESSED,
        SKIP: SKIPPED,
        BROKEN: BROKEN_CATEGORY,
        None: REMOVED_PATH,
    },
    BROKEN: {
        PASS: FIXED,
        FAIL: BROKEN_CATEGORY,
        ERROR: BROKEN_CATEGORY,
        SKIP: BROKEN_CATEGORY,
        BROKEN: BROKEN_CATEGORY,
        None: BROKEN_CATEGORY,
    },
    None: {
        PASS: NEW_PATH,
        FAIL: REGRESSED,
        ERROR: SPURIOUS_REGRESSED,
        SKIP: SKIPPED,
        BROKEN: BROKEN_CATEGORY,
        None: SKIPPED,
    },
}


def categorize(
    baseline: str | None,
    candidate: str | None,
    attempts: list[str] | None = None,
    baseline_attempts: list[str] | None = None,
) -> str:
    """The category of one path. `attempts` / `baseline_attempts` are each ref's outcomes over its reruns (the
    first run included): mixed outcomes on either side -> flaky, never a regression or a pass."""
    if any(history and len(set(history)) > 1 for history in (attempts, baseline_attempts)):
        return FLAKY
    try:
        return TABLE[baseline][candidate]
    except KeyError:
        raise ValueError(f"not an outcome pair: {baseline!r} -> {candidate!r}") from None
