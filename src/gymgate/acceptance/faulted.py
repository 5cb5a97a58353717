"""A fault path judged: what Gym did when the endpoint failed one of its calls (gymgate.faults), held to the rules
every Gym must keep whatever it does — a call that never got its answer yields no reward that looks earned, the
call is tried a bounded number of times, a retry asks the model exactly what the failed attempt asked, no error is
passed on to a model as part of a prompt, the path ends within its deadline — and kept as the path's observation
(`PathRecord.fault`, and `observed`), so a bump that changes how Gym handles it shows in the comparison.

A fault Gym absorbs (it tried again and got the answer) is judged by every check of the accepted path as well."""

from __future__ import annotations

import json
import re
from typing import Any

from gymgate.acceptance.checks import failure_markers
from gymgate.cases.case import lookup
from gymgate.consumer.errors import GymDied, GymTransportError, RejectedResult, RolloutDataFailure, RolloutTimeout
from gymgate.endpoint.faults import INJECTED
from gymgate.faults.catalogue import Fault, catalogue
from gymgate.runfolder import PathRecord

ABSORBED = "absorbed"  # Gym tried again and got the answer: the row is judged like the accepted path's
IN_ROW = "reported in the row"  # the row came back carrying a failure marker
BY_RUN = "reported by /run"  # /run answered an error status: RL drops or retries the sample
REJECTED = "rejected by RL"  # the row carried _ng_failure_class and the run's RL profile rejects such a row
NO_END = "no end"  # the rollout did not end within the path's deadline
NEVER_CALLED = "never called"  # the rollout never reached the faulted call: the usual checks and errors apply
FAULT = "fault"  # the failure kind these rules report (runfolder/record.py Failure.kind)


def _attempts(exchanges: list, fault: Fault) -> list:
    """The endpoint's exchanges that were attempts of the faulted call, in order."""
    return [e for e in exchanges if (e.kind, e.turn) == (fault.caller, fault.call)]


def calls(exchanges: list, fault: Fault) -> tuple[int, bool]:
    """How many attempts of the faulted call the endpoint saw, and whether one of them got its answer."""
    tried = _attempts(exchanges, fault)
    return len(tried), any(e.status == 200 and not e.injected for e in tried)


def _conversation(exchange) -> tuple[Any, Any]:
    return exchange.body.get("messages"), exchange.body.get("tools")


def _held(result: PathRecord, fault: Fault, attempts: int, handled: str, exchanges: list) -> None:
    """The rules any handling keeps: bounded attempts; each retry the same request; no error passed on to a model;
    a transient fault absorbed."""
    limit = catalogue().max_attempts
    if attempts > limit:
        result.fail(FAULT, "attempts of the failed call", f"at most {limit}", attempts)
    tried = _attempts(exchanges, fault)
    differs = next((i for i, e in enumerate(tried) if _conversation(e) != _conversation(tried[0])), None)
    if differs is not None:
        result.fail(
            FAULT,
            f"attempt {differs + 1} of the failed call",
            "the first attempt's messages and tools (a retry asks the same)",
            json.dumps(_conversation(tried[differs]))[:600],
        )
    first = next((i for i, e in enumerate(exchanges) if e.injected), len(exchanges))
    leaked = next((e for e in exchanges[first + 1 :] if INJECTED in json.dumps(e.body)), None)
    if leaked is not None:
        result.fail(
            FAULT,
            f"{leaked.kind or leaked.route} request after the failed attempt",
            "no error text in what a model is asked",
            f"the injected error leaked into the prompt: {_excerpt(json.dumps(leaked.body))}",
        )
    if fault.absorb and handled != ABSORBED:
        result.fail(FAULT, f"{fault.name} handled", f"{ABSORBED} (a transient fault: Gym tries again)", handled)


def judge_row(result: PathRecord, fault: Fault, exchanges: list, full: dict[str, Any]) -> bool:
    """A row came back. Returns whether the accepted path's own checks apply (the fault was absorbed, or its call
    was never made: those checks say what went otherwise); else the row is judged here alone: it must say it is a
    failure."""
    attempts, answered = calls(exchanges, fault)
    if not attempts:
        result.sections["fault"] = {**fault.to_json(), "attempts": 0, "answered": False, "handled": NEVER_CALLED}
        return True
    found = failure_markers(full)
    try:
        reward = lookup(full, "reward")
    except KeyError:
        reward = None
    handled = ABSORBED if answered else IN_ROW
    result.sections["fault"] = {**fault.to_json(), "attempts": attempts, "answered": answered, "handled": handled}
    result.sections["fault"] |= {"reward": reward, "markers": found}
    _held(result, fault, attempts, handled, exchanges)
    if not answered and not found:
        result.fail(
            FAULT,
            "row after a call that never got its answer",
            "a failure marker, or an error status from /run",
            f"reward {reward!r} with no failure marker: a sample that looks earned",
        )
    if not answered:
        result.reward = reward
        result.complete()
    return answered


def judge_failure(result: PathRecord, fault: Fault, exchanges: list, exc: BaseException) -> bool:
    """The rollout failed. Returns whether this judged it (a failure Gym reported for a call that never got its
    answer, or a hang); False leaves it to the usual handling (an ERROR naming who is to blame)."""
    attempts, answered = calls(exchanges, fault)
    result.sections["fault"] = {**fault.to_json(), "attempts": attempts, "answered": answered}
    if not attempts:  # the rollout failed before the faulted call: the fault tested nothing, the failure is Gym's own
        result.sections["fault"]["handled"] = NEVER_CALLED
        return False
    if answered or isinstance(exc, GymDied):
        return False
    if isinstance(exc, RolloutTimeout):
        result.sections["fault"]["handled"] = NO_END
        result.fail(FAULT, "end of the rollout", "within the path's deadline", f"{exc} after {attempts} attempts")
    elif isinstance(exc, RejectedResult):
        result.sections["fault"]["handled"] = REJECTED
    elif isinstance(exc, (GymTransportError, RolloutDataFailure)):
        status = re.search(r"/run answered HTTP (\d+)", str(exc))
        result.sections["fault"].update(handled=BY_RUN, run_status=int(status.group(1)) if status else None)
    else:
        return False
    _held(result, fault, attempts, result.sections["fault"]["handled"], exchanges)
    result.complete()
    return True


def _excerpt(text: str) -> str:
    at = text.find(INJECTED)
    return text[max(0, at - 120) : at + 120]


def observe(result: PathRecord, exchanges: list, gym_result: Any) -> None:
    """The fault path's observation: every request the model received (each failed attempt with its status), what
    Gym returned (None when /run failed), and how Gym handled the fault."""
    result.observe(((e.kind or e.route, e.status, e.body) for e in exchanges), gym_result)
    result.observed[FAULT] = dict(result.sections["fault"])
