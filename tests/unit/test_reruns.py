"""Reruns decide flaky versus real, BROKEN refs are reported as broken, and failures are grouped by root
cause. The runs are fakes written to disk (fault injection); the real matrix runs in tests/integration."""

from __future__ import annotations

from gymgate.compare.attempts import load_attempts
from gymgate.compare.runs import compare_runs
from gymgate.errors import EXIT_FAILED, EXIT_UNJUDGED
from gymgate.harness.reruns import run_reruns
from gymgate.harness.run import write_broken_run
from gymgate.refs.source import GymSource
from gymgate.report.markdown import render_markdown
from gymgate.results import RunResult
from gymgate.runfolder import RunFolder, RunMark
from gymgate.verdict import label
from tests.helpers import record, stored_run

REWARD = {"kind": "reward", "field": "reward", "expected": 1.0, "actual": 0.0}


def _source(name):
    return GymSource(name=name, kind="pin", version=name, requires_python=">=3.12", digest=name * 4, origin="test")


def _pair(tmp_path, candidate_outcome="FAIL", **candidate_fields):
    base = stored_run(tmp_path, "base", "0.3.0", [record("mcqa:accepted", "PASS"), record("mcqa:rejected", "PASS")])
    cand = stored_run(
        tmp_path,
        "cand",
        "0.4.0",
        [record("mcqa:accepted", candidate_outcome, **candidate_fields), record("mcqa:rejected", "PASS")],
    )
    return base, cand


class FakeMatrix:
    """Attempts whose outcomes are scripted per (ref, attempt number); records every call."""

    def __init__(self, script):
        self.script, self.calls = script, []

    def __call__(self, source, paths, run_dir):
        n = int(run_dir.name.rsplit("-", 1)[1])
        self.calls.append((source.name, n, list(paths)))
        run = stored_run(run_dir.parent, run_dir.name, source.name, [])
        for path in paths:
            outcome = self.script[source.name][n]
            fields = {"failures": [REWARD]} if outcome == "FAIL" else {}
            RunFolder(run).write_record(record(path, outcome, **fields))
        return RunResult(run, 0)


def test_a_failure_that_repeats_is_a_regression_with_every_attempt_shown(tmp_path):
    base, cand = _pair(tmp_path, failures=[REWARD], reason="[reward] reward: expected 1.0, got 0.0")
    matrix = FakeMatrix({"0.4.0": {2: "FAIL", 3: "FAIL"}, "0.3.0": {2: "PASS", 3: "PASS"}})
    run_reruns((_source("0.3.0"), base), (_source("0.4.0"), cand), 2, matrix)
    # Only the failing path is rerun, on both refs, in their own folders; failing the same way in a second Gym
    # instance reproduces it: no third attempt (one that passed would make it nondeterministic: regressed all the same).
    assert matrix.calls == [("0.4.0", 2, ["mcqa:accepted"]), ("0.3.0", 2, ["mcqa:accepted"])]
    comparison = compare_runs(base, cand)
    item = {p.path: p for p in comparison.paths}["mcqa:accepted"]
    assert item.category == "regressed"
    assert item.attempts == {"baseline": ["PASS"] * 2, "candidate": ["FAIL"] * 2}
    assert comparison.exit_code == EXIT_FAILED
    report = render_markdown(comparison)
    assert "(baseline: PASS, PASS; candidate: FAIL, FAIL)" in report
    assert "- [reward] reward — 1 path: `mcqa:accepted` (regressed)" in report


def test_newly_flaky_on_the_candidate_is_a_regression_and_stops_the_reruns(tmp_path):
    """The baseline passed every time; the candidate failed, then passed: the bump made the path unreliable."""
    base, cand = _pair(tmp_path, failures=[REWARD])
    matrix = FakeMatrix({"0.4.0": {2: "PASS", 3: "PASS"}, "0.3.0": {2: "PASS", 3: "PASS"}})
    run_reruns((_source("0.3.0"), base), (_source("0.4.0"), cand), 2, matrix)
    assert [c[1] for c in matrix.calls] == [2, 2]  # decided after one rerun: no third attempt
    comparison = compare_runs(base, cand)
    item = {p.path: p for p in comparison.paths}["mcqa:accepted"]
    assert item.category == "regressed"
    assert comparison.exit_code == EXIT_FAILED
    assert comparison.verdict == "1 regressed, 0 broken, 1 nondeterministic on the candidate"
    assert item.reason.startswith(
        "nondeterministic on the candidate: attempt 1 outcome = FAIL vs attempt 2 outcome = PASS"
    )
    assert item.causes[0] == "[nondeterministic] outcome"
    assert "mcqa:accepted" in (cand / "reruns" / "reruns.json").read_text()


def test_a_flaky_baseline_makes_the_path_flaky_too(tmp_path):
    base, cand = _pair(tmp_path, failures=[REWARD])
    matrix = FakeMatrix({"0.4.0": {2: "FAIL", 3: "FAIL"}, "0.3.0": {2: "FAIL", 3: "FAIL"}})
    run_reruns((_source("0.3.0"), base), (_source("0.4.0"), cand), 2, matrix)
    assert {p.path: p.category for p in compare_runs(base, cand).paths}["mcqa:accepted"] == "flaky"


def test_no_reruns_when_everything_passes_or_when_disabled(tmp_path):
    base, cand = _pair(tmp_path, candidate_outcome="PASS")
    matrix = FakeMatrix({})
    run_reruns((_source("0.3.0"), base), (_source("0.4.0"), cand), 2, matrix)
    assert matrix.calls == [] and not (cand / "reruns").exists()
    base2, cand2 = _pair(tmp_path / "x", failures=[REWARD])
    run_reruns((_source("0.3.0"), base2), (_source("0.4.0"), cand2), 0, matrix)
    assert matrix.calls == []
    assert {p.path: p.category for p in compare_runs(base2, cand2).paths}["mcqa:accepted"] == "regressed"


def test_baseline_attempts_belong_to_their_baseline_and_unfinished_attempts_do_not_count(tmp_path):
    base, cand = _pair(tmp_path, failures=[REWARD])
    matrix = FakeMatrix({"0.4.0": {2: "ERROR", 3: "FAIL"}, "0.3.0": {2: "PASS", 3: "FAIL"}})
    run_reruns((_source("0.3.0"), base), (_source("0.4.0"), cand), 2, matrix)
    assert _labels(load_attempts(cand, base)["baseline"]) == {"mcqa:accepted": ["PASS", "FAIL"]}
    other = stored_run(tmp_path, "other-baseline", "0.3.0", [record("mcqa:accepted", "PASS")])
    assert load_attempts(cand, other)["baseline"] == {}  # made for another baseline run
    RunFolder(cand).attempt("candidate", 3).write_mark(RunMark(complete=False))
    assert _labels(load_attempts(cand, base)["candidate"]) == {"mcqa:accepted": ["ERROR"]}


def _labels(found):
    return {path: [label(r) for r in records] for path, records in found.items()}


def _broken(tmp_path, reason):
    run = RunFolder(tmp_path / "broken")
    run.root.mkdir()
    run.write_source(_source("0.5.0").to_json())  # as run_ref opens every run folder
    write_broken_run(run, _source("0.5.0"), ["mcqa:accepted", "mcqa:rejected"], reason, "r1")
    return run.root


def test_a_candidate_that_cannot_be_built_is_broken_and_fails_the_bump(tmp_path):
    base, _ = _pair(tmp_path)
    comparison = compare_runs(base, _broken(tmp_path, "build: requires Python >=3.13.14"))
    assert {p.category for p in comparison.paths} == {"broken"}
    assert comparison.exit_code == EXIT_FAILED
    assert comparison.verdict == "candidate BROKEN: build: requires Python >=3.13.14"
    report = render_markdown(comparison)
    assert report.index("**Verdict: candidate BROKEN") < report.index("### The candidate is BROKEN")


def test_a_broken_baseline_cannot_judge_anything(tmp_path):
    _, cand = _pair(tmp_path)
    comparison = compare_runs(_broken(tmp_path, "build: cannot lock"), cand)
    assert comparison.exit_code == EXIT_UNJUDGED
    # The broken baseline is 0.5.0, the candidate 0.4.0: a downgrade, named first.
    assert comparison.verdict.startswith("downgrade 0.5.0 → 0.4.0: cannot judge: the baseline is BROKEN")


def test_a_ref_none_of_whose_environments_starts_is_broken(tmp_path):
    base = stored_run(tmp_path, "base", "0.3.0", [record("mcqa:accepted", "PASS"), record("code_gen:accepted", "PASS")])
    startup = "startup: Process mcqa_resources_server finished unexpectedly!"
    cand = stored_run(
        tmp_path,
        "cand",
        "0.4.0",
        [record("mcqa:accepted", "ERROR", reason=startup), record("code_gen:accepted", "ERROR", reason=startup)],
    )
    comparison = compare_runs(base, cand)
    assert {p.category for p in comparison.paths} == {"broken"}
    assert comparison.candidate_broken.startswith("no environment could start: startup: Process mcqa")
    # One environment starting is enough for the ref not to be broken: then it is a per-path error.
    RunFolder(cand).write_record(record("code_gen:accepted", "PASS"))
    comparison = compare_runs(base, cand)
    assert {p.path: p.category for p in comparison.paths}["mcqa:accepted"] == "regressed"
    assert comparison.candidate_broken == ""


def test_a_candidate_that_never_started_in_any_attempt_fails_the_bump(tmp_path):
    """The first run is BROKEN (no environment started) and the rerun errors: a mix of failures, never flaky,
    never exit 0 (what happened on the real 0.7.0, and on a 0.4.0 whose model server raises at import)."""
    base = stored_run(tmp_path, "base", "0.3.0", [record("mcqa:accepted", "PASS"), record("code_gen:accepted", "PASS")])
    startup = "startup: RuntimeError: boom (logs/code_gen.log)"
    cand = stored_run(
        tmp_path,
        "cand",
        "0.4.0",
        [record(p, "ERROR", reason=startup) for p in ("mcqa:accepted", "code_gen:accepted")],
    )
    matrix = FakeMatrix({"0.4.0": {2: "ERROR", 3: "ERROR"}, "0.3.0": {2: "PASS", 3: "PASS"}})
    run_reruns((_source("0.3.0"), base), (_source("0.4.0"), cand), 2, matrix)
    comparison = compare_runs(base, cand)
    assert {p.path: p.attempts["candidate"] for p in comparison.paths} == {
        "code_gen:accepted": ["BROKEN", "ERROR"],  # the same error in a second Gym: reproduced, no third
        "mcqa:accepted": ["BROKEN", "ERROR"],
    }
    assert {p.category for p in comparison.paths} == {"broken"}
    assert comparison.exit_code == EXIT_FAILED
    assert comparison.verdict.startswith("candidate BROKEN: no environment could start")


def test_root_causes_group_paths_that_broke_the_same_check(tmp_path):
    contract = {"kind": "request_contract", "field": "turns.0.temperature", "expected": 0.7, "actual": 1.0}
    base = stored_run(tmp_path, "base", "0.3.0", [record(p, "PASS") for p in ("mcqa:accepted", "code_gen:accepted")])
    cand = stored_run(
        tmp_path,
        "cand",
        "0.4.0",
        [
            record("mcqa:accepted", "FAIL", failures=[contract, REWARD]),
            record("code_gen:accepted", "FAIL", failures=[{**contract, "field": "turns.1.temperature"}]),
        ],
    )
    report = render_markdown(compare_runs(base, cand))
    assert (
        "- [request_contract] turns.N.temperature — 2 paths: `code_gen:accepted` (regressed), "
        "`mcqa:accepted` (regressed)" in report
    )
    assert "- [reward] reward — 1 path: `mcqa:accepted` (regressed)" in report
