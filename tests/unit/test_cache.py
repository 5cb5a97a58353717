"""The result cache (compare/reuse.py): only a clean, complete run with exactly the same inputs is served."""

from __future__ import annotations

import json

from gymgate.compare.reuse import find_cached
from gymgate.runfolder import RunFolder, WorkerRecord
from tests.helpers import record, stored_run

PATHS = ("mcqa:accepted", "mcqa:rejected")


def _run(root, name, outcomes=("PASS", "PASS"), inputs="k", finished=1.0, **mark):
    records = [record(p, o, blame="gym" if o == "ERROR" else "") for p, o in zip(PATHS, outcomes, strict=True)]
    mark = {"expected": list(PATHS), "inputs": inputs, "pytest_exit": 0, "finished": finished, **mark}
    return stored_run(root, name, "0.4.0", records, **mark)


def test_only_a_clean_complete_run_with_the_same_inputs_is_served(tmp_path):
    assert find_cached(tmp_path, "k") is None
    clean = _run(tmp_path, "clean")
    assert find_cached(tmp_path, "k").root == clean
    assert find_cached(tmp_path, "other") is None  # any input changed: not this run
    newer = _run(tmp_path, "newer", ("PASS", "SKIP"), finished=2.0)
    assert find_cached(tmp_path, "k").root == newer  # the newest clean one; SKIP (absent environment) is clean


def test_red_unfinished_or_foreign_runs_are_never_served(tmp_path):
    _run(tmp_path, "fail", ("PASS", "FAIL"), finished=5.0)
    _run(tmp_path, "gym-error", ("ERROR", "PASS"), finished=5.0)
    _run(tmp_path, "interrupted", complete=False, incomplete="interrupted (SIGTERM)", finished=5.0)
    _run(tmp_path, "session-died", pytest_exit=2, finished=5.0)
    _run(tmp_path, "lifecycle", lifecycle=["1 process(es) of the run outlived it and were killed"], finished=5.0)
    missing = _run(tmp_path, "missing", finished=5.0)
    (missing / "paths" / "mcqa-rejected.json").unlink()  # an expected path without a record
    old = _run(tmp_path, "old-schema", finished=5.0)
    mark = json.loads((old / "run.json").read_text())
    mark["schema"] = 1
    (old / "run.json").write_text(json.dumps(mark))
    stopped = _run(tmp_path, "gym-did-not-stop", finished=5.0)
    RunFolder(stopped).write_worker("gw0", WorkerRecord("gw0", stop_errors={"mcqa": ["shutdown timed out"]}))
    assert find_cached(tmp_path, "k") is None
    clean = _run(tmp_path, "clean", finished=1.0)
    assert find_cached(tmp_path, "k").root == clean  # older than every red run, and still the only one served


def test_a_run_whose_only_disagreements_are_known_defects_is_clean(tmp_path):
    """A reviewed known defect (gymgate.variants.known) passes its run alone, so the run is served; a variant that
    disagrees without a review is red."""
    known = {"agrees": False, "known": {"reason": "reviewed"}}
    variant = "mcqa:form.boxed_text.accepted"
    mark = {"expected": [variant], "pytest_exit": 0, "finished": 1.0}
    reviewed = stored_run(tmp_path, "r1", "0.4.0", [record(variant, "PASS", variant=known)], inputs="k", **mark)
    assert find_cached(tmp_path, "k").root == reviewed
    red = [record(variant, "FAIL", variant={"agrees": False})]
    stored_run(tmp_path, "r2", "0.4.0", red, inputs="n", **mark)
    assert find_cached(tmp_path, "n") is None


def test_a_red_run_is_served_only_to_the_invocation_that_made_it(tmp_path):
    """nox's matrix sessions pass their invocation's start (`--reuse-since`): the report over every ref reads the
    red run a per-pin session just made; an older red run, or an unfinished one, is never served."""
    _run(tmp_path, "older-red", ("PASS", "FAIL"), started=100.0, finished=150.0)
    assert find_cached(tmp_path, "k", since=200.0) is None
    ours = _run(tmp_path, "ours-red", ("ERROR", "FAIL"), started=210.0, finished=260.0)
    _run(tmp_path, "ours-cut", complete=False, incomplete="interrupted (SIGTERM)", started=220.0, finished=300.0)
    assert find_cached(tmp_path, "k", since=200.0).root == ours
    assert find_cached(tmp_path, "k") is None  # without it, red is never served
