"""The comparison table: every outcome pair has exactly one category, and the ones that matter are right."""

from __future__ import annotations

import itertools

import pytest

from gymgate.compare import categories as c


def test_every_pair_is_covered_by_the_table():
    for baseline, candidate in itertools.product(c.OUTCOMES, repeat=2):
        assert c.categorize(baseline, candidate) in {
            c.REGRESSED,
            c.FIXED,
            c.SAME_PASS,
            c.SAME_FAIL,
            c.SPURIOUS_REGRESSED,
            c.BROKEN_CATEGORY,
            c.SKIPPED,
            c.NEW_PATH,
            c.REMOVED_PATH,
        }


@pytest.mark.parametrize(
    ("baseline", "candidate", "category"),
    [
        ("PASS", "PASS", "same-pass"),
        ("PASS", "FAIL", "regressed"),
        ("PASS", "ERROR", "spurious-regressed"),  # infrastructure is never counted as a Gym regression
        ("FAIL", "PASS", "fixed"),
        ("FAIL", "FAIL", "same-fail"),
        ("ERROR", "FAIL", "regressed"),
        ("SKIP", "PASS", "new path"),  # e.g. structured_outputs_v4 appearing in 0.3.0
        ("SKIP", "SKIP", "skipped"),
        (None, "PASS", "new path"),
        ("PASS", None, "removed path"),
        ("PASS", "BROKEN", "broken"),
        ("BROKEN", "PASS", "fixed"),
    ],
)
def test_the_pairs_that_decide_a_bump(baseline, candidate, category):
    assert c.categorize(baseline, candidate) == category


def test_mixed_attempts_are_flaky_never_a_pass_or_a_regression():
    assert c.categorize("PASS", "FAIL", attempts=["FAIL", "PASS", "FAIL"]) == c.FLAKY
    assert c.categorize("PASS", "PASS", attempts=["PASS", "ERROR"]) == c.FLAKY
    assert c.categorize("PASS", "FAIL", attempts=["FAIL", "FAIL", "FAIL"]) == c.REGRESSED
    assert c.categorize("PASS", "FAIL", ["FAIL"] * 3, baseline_attempts=["PASS", "FAIL", "PASS"]) == c.FLAKY
    assert c.categorize("PASS", "FAIL", ["FAIL"] * 3, baseline_attempts=["PASS"] * 3) == c.REGRESSED


def test_unknown_outcomes_are_rejected():
    with pytest.raises(ValueError, match="not an outcome pair"):
        c.categorize("MAYBE", "PASS")
