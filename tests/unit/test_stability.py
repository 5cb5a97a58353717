"""A ref that does not do the same thing twice: its attempts of a path are diffed with each other (the same
full-observation diff that compares refs), and a candidate that disagrees with itself where the baseline does not is
regressed in every rendering. Records are the real type, written to disk (fault injection)."""

from __future__ import annotations

import io
import json

from gymgate.compare.alone import judge_run
from gymgate.compare.reuse import find_cached, inputs_digest
from gymgate.compare.runs import compare_runs
from gymgate.compare.stability import disagreement
from gymgate.errors import EXIT_FAILED, EXIT_OK
from gymgate.report.summary import print_summary
from gymgate.runfolder import RunFolder
from tests.helpers import REWARD, observation, record, stored_run


def _twice(path, outcome="PASS", again=None, **fields):
    """A record of two attempts in one Gym: the second as given (`again`), else the same as the first."""
    first = record(path, outcome, **fields)
    second = again or record(path, outcome, **fields)
    first.repeats = [second.to_json()]
    return first


def test_attempts_that_agree_after_the_declared_nondeterminism_agree():
    a = record("mcqa:accepted", "PASS")
    b = record(
        "mcqa:accepted", "PASS", observed=observation(result={"response": {"id": "resp_" + "b" * 32, "output": []}})
    )
    assert disagreement([a, b]) is None  # a fresh uuid per response is declared, not a difference


def test_a_value_that_differs_between_attempts_is_named_side_by_side():
    a = record("mcqa:accepted", "PASS")
    b = record("mcqa:accepted", "PASS", observed=observation(result={"extracted_answer": "B"}))
    c = record("mcqa:accepted", "PASS", observed=observation(params={"seed": 7}))
    found = disagreement([a, a, b])
    assert (found.first, found.other, found.field) == (1, 3, "result.extracted_answer")
    assert found.line("candidate") == (
        "nondeterministic on the candidate: attempt 1 result.extracted_answer = <absent> vs attempt 3 "
        'result.extracted_answer = "B"'
    )
    assert disagreement([a, c]).field == "requests.policy.0.body.seed"


def test_flaky_names_the_outcome_then_the_first_differing_value():
    passed = record("mcqa:accepted", "PASS")
    failed = record("mcqa:accepted", "FAIL", failures=[REWARD], observed=observation(result={"reward": 0.0}))
    found = disagreement([passed, failed])
    assert found.flaky and found.field == "outcome"
    assert found.line("candidate") == (
        "nondeterministic on the candidate: attempt 1 outcome = PASS vs attempt 2 outcome = FAIL; "
        "attempt 1 result.reward = 1.0 vs attempt 2 result.reward = 0.0 (+1 more differing)"
    )


def test_ways_to_fail_and_harness_errors_are_not_disagreements():
    failed = record("mcqa:accepted", "FAIL", failures=[REWARD])
    timeout = record("mcqa:accepted", "ERROR", blame="gym", reason="timeout", observed={})
    harness = record("mcqa:accepted", "ERROR", blame="harness", reason="ray", observed={})
    assert disagreement([failed, timeout]) is None  # never passed: the first informative attempt judges it
    assert disagreement([record("mcqa:accepted", "PASS"), harness]) is None  # says nothing about Gym


def _pair(tmp_path, base_again=None, cand_again=None):
    base = stored_run(tmp_path, "base", "0.3.0", [_twice("mcqa:accepted", again=base_again)])
    cand = stored_run(tmp_path, "cand", "0.4.0", [_twice("mcqa:accepted", again=cand_again)])
    return base, cand


def test_a_candidate_that_disagrees_with_itself_is_regressed_in_every_rendering(tmp_path):
    wobble = record("mcqa:accepted", "PASS", observed=observation(result={"extracted_answer": "b"}))
    base, cand = _pair(tmp_path, cand_again=wobble)
    comparison = compare_runs(base, cand)
    (item,) = comparison.paths
    assert item.category == "regressed" and comparison.exit_code == EXIT_FAILED
    assert comparison.verdict == "1 regressed, 0 broken, 1 nondeterministic on the candidate"
    line = "nondeterministic on the candidate: attempt 1 result.extracted_answer = <absent> vs attempt 2"
    assert item.reason.startswith(line) and item.causes == ["[nondeterministic] result.extracted_answer"]
    from gymgate.harness.reports import write_reports

    text, _ = write_reports(comparison, cand)
    # The terminal shows the root causes: the side-by-side line is there too, under its cause.
    roots = text.split("### Root causes", 1)[1].split("\n### ", 1)[0]
    assert f"  - `mcqa:accepted`: {line}" in roots
    shown = line.split(" = ")[0]  # the page and the XML escape the values' quotes and brackets
    assert line in text and shown in (cand / "report.html").read_text() and shown in (cand / "junit.xml").read_text()
    results = json.loads((cand / "results.json").read_text())
    assert results["paths"][0]["nondeterministic"]["candidate"]["line"].startswith(line)
    assert results["summary"]["paths"][0]["nondeterministic"]["candidate"]["field"] == "result.extracted_answer"


def test_a_baseline_that_disagrees_with_itself_is_flaky_and_named_never_a_regression(tmp_path):
    wobble = record("mcqa:accepted", "PASS", observed=observation(result={"extracted_answer": "b"}))
    base, cand = _pair(tmp_path, base_again=wobble)
    comparison = compare_runs(base, cand)
    (item,) = comparison.paths
    assert (item.category, item.flaky_on, comparison.exit_code) == ("flaky", "baseline", EXIT_OK)
    assert item.reason.startswith("nondeterministic on the baseline")
    assert comparison.verdict == "no regression (0 paths pass on both, 1 flaky)"
    base, cand = _pair(tmp_path / "both", base_again=wobble, cand_again=wobble)
    (item,) = compare_runs(base, cand).paths
    assert (item.category, item.flaky_on) == ("flaky", "both")


def test_a_ref_run_alone_whose_attempts_disagree_fails_and_is_never_served_from_the_cache(tmp_path):
    wobble = record("mcqa:accepted", "PASS", observed=observation(result={"extracted_answer": "b"}))
    digest = inputs_digest("shared", ["mcqa:accepted"])
    run = stored_run(
        tmp_path,
        "alone",
        "0.4.0",
        [_twice("mcqa:accepted", again=wobble)],
        inputs=digest,
        pytest_exit=0,
        expected=["mcqa:accepted"],
    )
    out = io.StringIO()
    judged = judge_run(RunFolder(run), pytest_code=0)
    print_summary(judged, RunFolder(run), out=out)
    assert judged.code == EXIT_FAILED
    assert "1 nondeterministic" in out.getvalue() and "NONDET" in out.getvalue()
    assert find_cached(tmp_path, digest) is None
    RunFolder(run).write_record(_twice("mcqa:accepted"))  # the same attempts agreeing: clean, and served
    assert find_cached(tmp_path, digest).root == run


def test_a_reward_that_is_not_a_number_is_shown_never_a_crash(tmp_path):
    """Gym sending the reward as a string (the reward-not-a-number mutant) is a finding, not a gymgate crash."""
    run = stored_run(tmp_path, "odd", "0.4.0", [_twice("mcqa:accepted", "FAIL", reward="1.0", failures=[REWARD])])
    out = io.StringIO()
    judged = judge_run(RunFolder(run), pytest_code=1)
    print_summary(judged, RunFolder(run), out=out)
    assert judged.code == EXIT_FAILED
    assert "'1.0'" in out.getvalue()
