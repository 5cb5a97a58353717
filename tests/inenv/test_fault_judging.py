"""A fault path judged on what Gym did (acceptance/faulted.py): each rule fails the path exactly when it is broken."""

from __future__ import annotations

import pytest

from gymgate.acceptance import faulted
from gymgate.consumer.errors import GymDied, GymTransportError, RolloutTimeout
from gymgate.endpoint.server import Exchange
from gymgate.faults.catalogue import Fault, catalogue
from gymgate.outcomes import FAIL, PASS
from gymgate.runfolder import PathRecord

ONCE = Fault("once", "policy", 0, "http_500", 1, absorb=True)
EVERY = Fault("every", "judge", 0, "http_500", "every")


def record() -> PathRecord:
    return PathRecord(path="mcqa:fault.once", env="mcqa", mode="fault.once", gym={})


def attempts(kind: str, statuses: list[int], injected: int) -> list[Exchange]:
    """The call's attempts: the first `injected` failed by the fault."""
    return [
        Exchange(env="mcqa", route="chat", body={}, status=s, kind=kind, turn=0, injected="f" if i < injected else "")
        for i, s in enumerate(statuses)
    ]


def test_a_fault_gym_absorbs_leaves_the_row_to_the_accepted_paths_checks():
    result = record()
    assert faulted.judge_row(result, ONCE, attempts("policy", [500, 200], 1), {"reward": 1.0}) is True
    assert result.sections["fault"]["handled"] == faulted.ABSORBED and result.sections["fault"]["attempts"] == 2
    assert result.failures == []


def test_a_row_after_a_call_never_answered_must_say_it_failed():
    swallowed = record()  # the judge's error turned into a reward-0 sample, no marker
    assert faulted.judge_row(swallowed, EVERY, attempts("judge", [500] * 3, 3), {"reward": 0.0}) is False
    assert swallowed.outcome == FAIL and "looks earned" in swallowed.reason
    marked = record()
    full = {"reward": 0.0, "_ng_failure_class": "judge_failed", "mask_sample": True}
    assert faulted.judge_row(marked, EVERY, attempts("judge", [500] * 3, 3), full) is False
    assert marked.outcome == PASS and marked.section("fault")["handled"] == faulted.IN_ROW
    assert marked.section("fault")["markers"] == {"_ng_failure_class": "judge_failed", "mask_sample": True}


def test_a_run_that_reports_the_failure_passes_and_a_hang_fails():
    reported = record()
    error = GymTransportError("/run answered HTTP 500: ClientResponseError")
    assert faulted.judge_failure(reported, EVERY, attempts("judge", [500] * 3, 3), error)
    assert reported.outcome == PASS and reported.section("fault")["run_status"] == 500
    hung = record()
    assert faulted.judge_failure(hung, EVERY, attempts("judge", [500] * 9, 9), RolloutTimeout("no result in 30 s"))
    assert hung.outcome == FAIL and hung.section("fault")["handled"] == faulted.NO_END


def test_unbounded_attempts_and_a_transient_fault_not_absorbed_fail():
    limit = catalogue().max_attempts
    many = record()
    assert faulted.judge_failure(many, EVERY, attempts("judge", [500] * (limit + 1), limit + 1), GymTransportError(""))
    assert many.outcome == FAIL and "attempts of the failed call" in many.reason
    dropped = record()  # a Gym that stopped retrying what every Gym retries
    assert faulted.judge_failure(
        dropped, ONCE, attempts("policy", [500], 1), GymTransportError("/run answered HTTP 500")
    )
    assert dropped.outcome == FAIL and "absorbed" in dropped.reason


def test_a_fault_whose_call_was_never_made_tested_nothing():
    """A Gym that fails before the faulted call (0.4.0's single_step crash on its own row): the usual handling."""
    failed = record()
    assert faulted.judge_failure(failed, ONCE, [], GymTransportError("/run answered HTTP 500")) is False
    assert failed.section("fault")["handled"] == faulted.NEVER_CALLED and failed.failures == []
    row = record()
    assert faulted.judge_row(row, ONCE, attempts("judge", [200], 0), {"reward": 1.0}) is True
    assert row.section("fault")["handled"] == faulted.NEVER_CALLED


@pytest.mark.parametrize("exc", [GymDied("the model server died"), ValueError("the consumer could not read it")])
def test_what_is_not_gyms_report_of_the_fault_is_left_to_the_usual_handling(exc):
    result = record()
    assert faulted.judge_failure(result, EVERY, attempts("judge", [500], 1), exc) is False


def _asked(messages: list[dict], status: int, injected: str = "", turn: int = 0) -> Exchange:
    body = {"messages": messages, "tools": []}
    return Exchange(env="mcqa", route="chat", body=body, status=status, kind="policy", turn=turn, injected=injected)


def test_a_retry_must_ask_the_same_and_never_pass_the_error_on():
    from gymgate.endpoint.faults import INJECTED, error_body

    question = [{"role": "user", "content": "q"}]
    same = record()
    assert faulted.judge_row(same, ONCE, [_asked(question, 500, "f"), _asked(question, 200)], {"reward": 1.0})
    assert same.failures == []
    error = {"role": "user", "content": error_body("http_500")["error"]["message"]}
    leaked = record()  # the retry carries the error the failed attempt got, as "feedback"
    faulted.judge_row(leaked, ONCE, [_asked(question, 500, "f"), _asked([*question, error], 200)], {"reward": 1.0})
    leaked.complete()
    assert leaked.outcome == FAIL and "a retry asks the same" in leaked.reason
    assert any("leaked into the prompt" in str(f.actual) and INJECTED in str(f.actual) for f in leaked.failures)
    later = record()  # the retry is the same, but the next turn is told what went wrong
    exchanges = [_asked(question, 500, "f"), _asked(question, 200), _asked([*question, error], 200, turn=1)]
    faulted.judge_row(later, ONCE, exchanges, {"reward": 1.0})
    later.complete()
    assert later.outcome == FAIL and [f.field for f in later.failures] == ["policy request after the failed attempt"]
