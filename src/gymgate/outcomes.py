"""The names a verdict is made of, defined once: a path's outcome, and who is to blame when it did not pass.

Every reader and writer (path records, the endpoint, the Fleet, comparisons, reports) spells them through here.
"""

from __future__ import annotations

PASS, FAIL, ERROR, SKIP, BROKEN = "PASS", "FAIL", "ERROR", "SKIP", "BROKEN"
OUTCOMES = (PASS, FAIL, ERROR, SKIP, BROKEN)

# Who is to blame for a path that did not pass for a reason other than a failed check.
GYM = "gym"  # a Gym server failed to start or died, answered with an error, timed out, or returned unusable data
CONTRACT = "contract"  # the endpoint refused a request: an RL override or sampling parameter did not reach the model
HARNESS = "harness"  # gymgate's own fault: its Ray cluster, its endpoint, a worker crash with no Gym cause
BLAMES = (GYM, CONTRACT, HARNESS)
