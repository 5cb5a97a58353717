"""The comparison table: every label pair has exactly one category, and the table fails closed."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from gymgate import verdict as c
from gymgate.errors import EXIT_UNJUDGED
from tests.helpers import record


def test_every_pair_is_covered_by_the_table():
    for baseline, candidate in itertools.product(c.LABELS, repeat=2):
        assert c.categorize(baseline, candidate) in c.CATEGORIES


@pytest.mark.parametrize(
    ("baseline", "candidate", "category"),
    [
        ("PASS", "PASS", "same-pass"),
        ("PASS", "FAIL", "regressed"),
        ("PASS", "ERROR", "regressed"),  # a Gym-blamed error that repeats is a regression, never exit 0
        ("PASS", "NO_RECORD", "regressed"),  # an expected path that left no record
        ("PASS", "SKIP", "regressed"),  # the environment's config or data is gone from the candidate
        ("PASS", "ERROR(harness)", "unjudged"),  # gymgate's own fault says nothing about Gym
        ("ERROR(harness)", "PASS", "unjudged"),
        ("PASS", None, "unjudged"),  # the candidate run was not asked for this path
        ("FAIL", "PASS", "fixed"),
        ("FAIL", "FAIL", "same-fail"),
        ("ERROR", "FAIL", "same-fail"),
        ("FAIL", "SKIP", "removed path"),
        ("SKIP", "PASS", "new path"),  # e.g. structured_outputs_v4 appearing in 0.3.0
        ("SKIP", "FAIL", "regressed"),
        ("SKIP", "SKIP", "skipped"),
        (None, "PASS", "new path"),
        ("PASS", "BROKEN", "broken"),
        ("BROKEN", "PASS", "fixed"),
    ],
)
def test_the_pairs_that_decide_a_bump(baseline, candidate, category):
    assert c.categorize(baseline, candidate) == category


def test_no_pair_that_passed_on_the_baseline_and_not_on_the_candidate_is_clean():
    clean = {c.SAME_PASS, c.FIXED, c.NEW_PATH, c.SKIPPED, c.SAME_FAIL, c.REMOVED_PATH}
    for candidate in c.LABELS:
        if candidate != "PASS":
            assert c.categorize("PASS", candidate) not in clean, candidate


def test_newly_flaky_on_the_candidate_is_a_regression_flaky_on_the_baseline_is_named():
    # The baseline agreed with itself: the bump made the path unreliable (exit 1), whatever the first attempt said.
    assert (
        c.categorize("PASS", "FAIL", attempts=["FAIL", "PASS", "FAIL"], baseline_attempts=["PASS"] * 2) == c.REGRESSED
    )
    assert c.categorize("PASS", "PASS", attempts=["PASS", "ERROR"], baseline_attempts=["PASS"] * 2) == c.REGRESSED
    assert c.categorize("FAIL", "PASS", attempts=["PASS", "FAIL"], baseline_attempts=["FAIL"] * 2) == c.REGRESSED
    assert c.categorize("PASS", "FAIL", attempts=["FAIL", "FAIL", "FAIL"]) == c.REGRESSED
    # The baseline disagreed with itself: flaky (named, exit 0), on the baseline only or on both.
    assert c.categorize("PASS", "FAIL", ["FAIL"] * 3, baseline_attempts=["PASS", "FAIL", "PASS"]) == c.FLAKY
    assert c.categorize("PASS", "PASS", ["PASS", "FAIL"], baseline_attempts=["PASS", "FAIL"]) == c.FLAKY
    assert c.categorize("PASS", "FAIL", ["FAIL"] * 3, baseline_attempts=["PASS"] * 3) == c.REGRESSED
    # Nondeterministic without a mixed outcome (compare/stability.py decides it): the same rule.
    assert c.categorize("PASS", "PASS", ["PASS"] * 2, ["PASS"] * 2, unstable=(False, True)) == c.REGRESSED
    assert c.categorize("PASS", "PASS", ["PASS"] * 2, ["PASS"] * 2, unstable=(True, True)) == c.FLAKY
    assert c.categorize("PASS", "PASS", ["PASS"] * 2, ["PASS"] * 2, unstable=(True, False)) == c.FLAKY
    assert c.categorize("PASS", "PASS", ["PASS"] * 2, ["PASS"] * 2) == c.SAME_PASS


@pytest.mark.parametrize(
    ("attempts", "category"),
    [
        (["BROKEN", "ERROR", "ERROR"], "broken"),  # the real 0.7.0 run: BROKEN first, reruns ERROR
        (["FAIL", "ERROR", "NO_RECORD"], "regressed"),
        (["ERROR", "FAIL"], "regressed"),
        (["NO_RECORD", "ERROR(harness)", "FAIL"], "regressed"),
        (["SKIP", "FAIL"], "regressed"),
    ],
)
def test_a_path_that_never_passes_is_never_flaky(attempts, category):
    """Flaky means some attempt passed and some did not: a mix of ways to fail is still a failure (exit 1)."""
    got = c.categorize("PASS", attempts[0], attempts=attempts, baseline_attempts=["PASS"])
    assert got == category
    assert got in c.FAILING
    assert not c.mixed(attempts)


def test_harness_errors_are_no_evidence_either_way():
    # A harness error then a real outcome: judged on the real one.
    assert c.categorize("PASS", "ERROR(harness)", attempts=["ERROR(harness)", "FAIL"]) == c.REGRESSED
    assert c.categorize("PASS", "ERROR(harness)", attempts=["ERROR(harness)", "PASS"]) == c.SAME_PASS
    # Nothing but harness errors on one side: unjudged.
    assert c.categorize("PASS", "ERROR(harness)", attempts=["ERROR(harness)"] * 3) == c.UNJUDGED


def test_flaky_side():
    assert c.flaky_side(True, False) == "baseline"
    assert c.flaky_side(True, True) == "both"


def test_labels_of_records():
    assert c.label(record("mcqa:accepted", "ERROR", blame="gym")) == "ERROR"
    assert c.label(record("mcqa:accepted", "ERROR", blame="harness")) == "ERROR(harness)"
    assert c.label(replace(record("mcqa:accepted", "ERROR", blame="harness"), missing=True)) == "NO_RECORD"
    assert c.label(record("mcqa:accepted", "FAIL", blame="contract")) == "FAIL"
    assert c.label(record("mcqa:accepted", "MAYBE")) == "ERROR"  # unknown outcomes are never a pass
    assert c.label(None) is None


def test_unknown_labels_are_rejected():
    with pytest.raises(ValueError, match="not a label pair"):
        c.categorize("MAYBE", "PASS")


@pytest.mark.parametrize(
    ("baseline", "candidate", "category"),
    [
        ("PASS", "PASS", "changed"),  # an unacknowledged contract change fails a path that would be same-pass
        ("PASS", "FAIL", "regressed"),  # … and never softens (or hides) a worse verdict
        ("FAIL", "PASS", "fixed"),
        ("PASS", "BROKEN", "broken"),
    ],
)
def test_an_unacknowledged_change_is_judged_by_the_table(baseline, candidate, category):
    assert c.categorize(baseline, candidate, changed=True) == category
    assert c.categorize("PASS", "PASS", changed=False) == "same-pass"


def test_exit_codes_of_a_ref_judged_alone():
    passed, failed = record("mcqa:accepted", "PASS"), record("mcqa:rejected", "FAIL")
    assert c.run_exit([passed], 0) == 0
    assert c.run_exit([passed, failed], 1) == 1
    assert c.run_exit([passed], 0, lifecycle=["mcqa: shutdown timed out"]) == 1
    assert c.run_exit([passed], 0, unstable=True) == 1  # attempts that disagree are a failure, never clean
    assert (
        c.run_exit([passed], 2) == EXIT_UNJUDGED and c.run_exit([], 0) == EXIT_UNJUDGED
    )  # unfinished, or nothing judged


def test_the_matrix_and_a_bisection_exit_by_their_verdicts():
    assert c.matrix_exit(None, [(0, False), (0, False)]) == 0
    assert c.matrix_exit(None, [(0, False), (0, True)]) == 1  # a BROKEN ref alone is a failure
    assert c.matrix_exit(None, [(EXIT_UNJUDGED, False)]) == EXIT_UNJUDGED
    assert c.bisect_exit(["mcqa:accepted"]) == 1 and c.bisect_exit([]) == 0
    assert c.unjudgeable("baseline", "0.4.0", 2, "") == "the baseline 0.4.0: it could not be judged"
    assert c.unjudgeable("baseline", "0.4.0", 1, "build: no lock").startswith("the baseline 0.4.0: it is BROKEN")
    assert c.unjudgeable("candidate", "0.5.0", 1, "build: no lock") == ""  # a BROKEN candidate is the finding
    assert c.unjudgeable("candidate", "0.5.0", 2, "") == "the candidate 0.5.0 could not be judged"
