"""What the harness and a ref's load worker say to each other: one JSON object a line, commands on the worker's
stdin, answers on its stdout after PREFIX (anything else a library prints there is not an answer)."""

from __future__ import annotations

import json
from typing import Any

PREFIX = "GYMGATE-LOAD "
READY, ALONE, ROUND, USAGE, STOP = "ready", "alone", "round", "usage", "stop"  # the commands (and the first answer)
SATURATED = "saturated"  # a batch of every environment with the policy server saturated
CONFIRM = "confirm"  # paths whose loaded rollouts differed, run alone again: is the difference their own?
# A session probe's read that was not its own session's (driver: a mismatch's field; never a path's own nondeterminism,
# so never confirmed alone again)
PROBE_FIELD = "session.read_your_writes"
ALONE_RUNS = 2  # runs of each path alone: the oracle, and the leaves that differ between them (the path's own noise)


def answer_line(data: dict[str, Any]) -> str:
    return PREFIX + json.dumps(data, sort_keys=True) + "\n"


def read_answer(line: str) -> dict[str, Any] | None:
    """The answer a line of the worker's stdout carries, or None for any other line."""
    if not line.startswith(PREFIX):
        return None
    return json.loads(line[len(PREFIX) :])
