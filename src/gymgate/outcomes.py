"""The names a verdict is made of, defined once: a path's outcome, and who is to blame when it did not pass.

Every reader and writer (path records, the endpoint, the Fleet, comparisons, reports) spells them through here.
"""

from __future__ import annotations

from enum import StrEnum


class Outcome(StrEnum):
    """How one path ended. A str, so records stay plain JSON ("PASS") and compare equal to what they read back."""

    PASS = "PASS"  # ran to its end and every check passed
    FAIL = "FAIL"  # ran to its end and a check failed
    ERROR = "ERROR"  # did not run to its end (who is to blame says why)
    SKIP = "SKIP"  # the environment is not in that Gym
    BROKEN = "BROKEN"  # the ref could not be locked, built or started at all


PASS, FAIL, ERROR, SKIP, BROKEN = Outcome.PASS, Outcome.FAIL, Outcome.ERROR, Outcome.SKIP, Outcome.BROKEN
OUTCOMES = tuple(Outcome)

# Who is to blame for a path that did not pass for a reason other than a failed check.
GYM = "gym"  # a Gym server failed to start or died, answered with an error, timed out, or returned unusable data
CONTRACT = "contract"  # the endpoint refused a request: an RL override or sampling parameter did not reach the model
HARNESS = "harness"  # gymgate's own fault: its Ray cluster, its endpoint, a worker crash with no Gym cause
BLAMES = (GYM, CONTRACT, HARNESS)
