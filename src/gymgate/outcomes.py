"""The names the session writes into a run folder, defined once: a path's outcome, who is to blame when it did not
pass, an environment's start-up state. (What a comparison or a bisection concludes from them is named where it is
decided: gymgate.verdict's Category and BisectVerdict.)

Every reader and writer (path records, the endpoint, the Fleet, comparisons, reports) spells them through here.
Each is a StrEnum, so records stay plain JSON ("PASS", "ready") and compare equal to the strings they read back.
"""

from __future__ import annotations

from enum import StrEnum


class Outcome(StrEnum):
    """How one path ended."""

    PASS = "PASS"
    FAIL = "FAIL"
    ERROR = "ERROR"
    SKIP = "SKIP"
    BROKEN = "BROKEN"


OUTCOME_MEANINGS = {
    Outcome.PASS: "ran to its end and every check passed",
    Outcome.FAIL: "ran to its end and a check failed",
    Outcome.ERROR: "did not run to its end (who is to blame says why)",
    Outcome.SKIP: "the environment is not in that Gym",
    Outcome.BROKEN: "the ref could not be locked, built or started at all",
}


PASS, FAIL, ERROR, SKIP, BROKEN = Outcome.PASS, Outcome.FAIL, Outcome.ERROR, Outcome.SKIP, Outcome.BROKEN
OUTCOMES = tuple(Outcome)


class Blame(StrEnum):
    """Who is to blame for a path that did not pass for a reason other than a failed check."""

    GYM = "gym"
    CONTRACT = "contract"
    HARNESS = "harness"


BLAME_MEANINGS = {
    Blame.GYM: "a Gym server failed to start or died, answered with an error, timed out, or returned unusable data",
    Blame.CONTRACT: "the endpoint refused a request: an RL override or sampling parameter missed the model",
    Blame.HARNESS: "gymgate's own fault: its Ray cluster, its endpoint, a worker crash with no Gym cause",
}


GYM, CONTRACT, HARNESS = Blame.GYM, Blame.CONTRACT, Blame.HARNESS
BLAMES = tuple(Blame)


class EnvState(StrEnum):
    """Where one environment's Gym is in its start-up (services/<env>.json)."""

    STARTING = "starting"
    READY = "ready"
    SKIPPED = "skipped"  # the environment is not in that Gym
    FAILED = "failed"
    DONE = "done"  # its paths ran on this worker and its Gym was stopped to make room for the next wave
