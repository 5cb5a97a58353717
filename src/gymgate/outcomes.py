"""The names a verdict is made of, defined once: a path's outcome, who is to blame when it did not pass, a
comparison's category, an environment's start-up state and a bisected commit's verdict.

Every reader and writer (path records, the endpoint, the Fleet, comparisons, reports) spells them through here.
Each is a StrEnum, so records stay plain JSON ("PASS", "ready") and compare equal to the strings they read back;
gymgate.verdict decides with them.
"""

from __future__ import annotations

from enum import StrEnum


class Outcome(StrEnum):
    """How one path ended."""

    PASS = "PASS"  # ran to its end and every check passed
    FAIL = "FAIL"  # ran to its end and a check failed
    ERROR = "ERROR"  # did not run to its end (who is to blame says why)
    SKIP = "SKIP"  # the environment is not in that Gym
    BROKEN = "BROKEN"  # the ref could not be locked, built or started at all


PASS, FAIL, ERROR, SKIP, BROKEN = Outcome.PASS, Outcome.FAIL, Outcome.ERROR, Outcome.SKIP, Outcome.BROKEN
OUTCOMES = tuple(Outcome)


class Blame(StrEnum):
    """Who is to blame for a path that did not pass for a reason other than a failed check."""

    GYM = "gym"  # a Gym server failed to start or died, answered with an error, timed out, or returned unusable data
    CONTRACT = "contract"  # the endpoint refused a request: an RL override or sampling parameter missed the model
    HARNESS = "harness"  # gymgate's own fault: its Ray cluster, its endpoint, a worker crash with no Gym cause


GYM, CONTRACT, HARNESS = Blame.GYM, Blame.CONTRACT, Blame.HARNESS
BLAMES = tuple(Blame)


class Category(StrEnum):
    """What a bump did to one path: the baseline's outcome against the candidate's (gymgate.verdict decides)."""

    REGRESSED = "regressed"
    BROKEN = "broken"  # either ref could not be locked, built or started
    CHANGED = "changed"  # passes on both, but with an unacknowledged contract change
    UNJUDGED = "unjudged"  # a harness error, or a path only one run was asked for: rerun
    FLAKY = "flaky"
    FIXED = "fixed"
    NEW_PATH = "new path"
    REMOVED_PATH = "removed path"  # failing on the baseline, absent from the candidate
    SAME_FAIL = "same-fail"
    SAME_PASS = "same-pass"
    SKIPPED = "skipped"


CATEGORIES = tuple(Category)  # in the order reports list them


class EnvState(StrEnum):
    """Where one environment's Gym is in its start-up (services/<env>.json)."""

    STARTING = "starting"
    READY = "ready"
    SKIPPED = "skipped"  # the environment is not in that Gym
    FAILED = "failed"


class BisectVerdict(StrEnum):
    """What one commit of a bisection was judged."""

    GOOD = "good"  # every chosen path as on the good ref
    BAD = "bad"  # a chosen path regresses, breaks or changes unacknowledged
    SKIP = "skip"  # cannot be built or started: bisection goes around it
    FLAKY = "flaky"  # its attempts disagreed: skipped too
    UNSURE = "unsure"  # an ERROR or an unjudged path: rerun in fresh Gyms
