"""Comparing two stored runs: categories per path, changed fields on pass-pass paths, the lock diff, the
verdict and exit code, and report.md with the verdict first."""

from __future__ import annotations

import json
import re

import pytest

from gymgate.cli import main
from gymgate.compare.runs import NEW_CAUSE, compare_runs
from gymgate.errors import EXIT_UNJUDGED, UsageError
from gymgate.report.markdown import render_markdown
from tests.helpers import observation, record, stored_run


def test_categories_changes_locks_and_verdict(tmp_path):
    base = stored_run(
        tmp_path,
        "a",
        "0.3.0",
        [
            record("mcqa:accepted", "PASS"),
            record("mcqa:rejected", "PASS"),
            record("code_gen:accepted", "PASS"),
            record("structured_outputs_v4:accepted", "SKIP"),
        ],
    )
    new_param = observation(params={"seed": 0}, result={"response": {"id": "resp_" + "b" * 32, "output": []}})
    cand = stored_run(
        tmp_path,
        "b",
        "0.4.0",
        [
            record("mcqa:accepted", "PASS", observed=new_param),
            record("mcqa:rejected", "PASS", observed=observation(result={"usage": {"tokens": 3}})),
            record("code_gen:accepted", "FAIL", reason="[reward] reward: expected 1.0, got 0.0"),
            record("structured_outputs_v4:accepted", "PASS"),
        ],
    )
    comparison = compare_runs(base, cand)
    categories = {p.path: p.category for p in comparison.paths}
    assert categories == {
        "mcqa:accepted": "changed",  # a new request parameter reaches the model: contract
        "mcqa:rejected": "same-pass",  # a new key in Gym's result: additive
        "code_gen:accepted": "regressed",
        "structured_outputs_v4:accepted": "new path",
    }
    changed, additive = comparison.changed
    # The response id is declared nondeterministic: only the parameter differs.
    assert [(c.field, c.before, c.after, c.kind) for c in changed.changes] == [
        ("requests.policy.0.body.seed", "<absent>", 0, "contract")
    ]
    assert [(c.field, c.kind) for c in additive.changes] == [("result.usage", "additive")]
    assert comparison.locks.highlighted["nemo-gym"] == ("0.3.0", "0.4.0")
    assert comparison.exit_code == 1
    report = render_markdown(comparison)
    assert report.splitlines()[2] == "**Verdict: 1 regressed, 0 broken, 1 changed (unacknowledged contract changes).**"
    assert "- **nemo-gym**: 0.3.0 → 0.4.0" in report
    assert "- `code_gen:accepted`: PASS → FAIL — [reward] reward: expected 1.0, got 0.0" in report
    assert "#### `requests.policy.*.body.seed` new in 0.4.0: `0` (RL trains on it) — mcqa × accepted" in report
    assert "| `requests.policy.*.body.seed` | all of them | `<absent>` | `0` |" in report
    assert '- `result.usage` new in 0.4.0: `{"tokens": 3}` (RL only logs it) — mcqa × rejected' in report
    assert '  - `result.usage` = `{"tokens": 3}`' in report


def test_a_path_new_in_the_candidate_that_fails_is_regressed_and_says_it_is_new(tmp_path):
    base = stored_run(tmp_path, "a", "0.6.0", [record("mcqa:accepted", "PASS"), record("arena:rec.1", "SKIP")])
    failing = "[recording] reward: expected 1.0, got 0.0"
    cand = stored_run(
        tmp_path,
        "b",
        "0.7.0",
        [
            record("mcqa:accepted", "FAIL", reason=failing),
            record("arena:rec.1", "FAIL", reason=failing),
            record("widesearch:rec.2", "ERROR", reason="Gym did not start"),
        ],
    )
    comparison = compare_runs(base, cand)
    paths = {p.path: p for p in comparison.paths}
    assert {k: p.category for k, p in paths.items()} == dict.fromkeys(paths, "regressed")  # red, fail closed
    assert paths["arena:rec.1"].causes[0] == paths["widesearch:rec.2"].causes[0] == NEW_CAUSE
    assert NEW_CAUSE not in paths["mcqa:accepted"].causes  # a working path the bump broke is not new
    assert comparison.exit_code == 1


def test_clean_bump_exits_0_and_cli_writes_the_report(tmp_path, capfd):
    base = stored_run(tmp_path, "a", "0.4.0", [record("mcqa:accepted", "PASS")])
    cand = stored_run(tmp_path, "b", "0.4.0", [record("mcqa:accepted", "PASS")])
    assert main(["compare", str(base), str(cand)]) == 0
    assert (cand / "report.md").read_text().splitlines()[2].startswith("**Verdict: no regression")
    assert "No package changes." in capfd.readouterr().out


def test_interrupted_or_foreign_folders_are_refused(tmp_path):
    base = stored_run(tmp_path, "a", "0.4.0", [record("mcqa:accepted", "PASS")])
    cut = stored_run(tmp_path, "b", "0.4.0", [], complete=False)
    with pytest.raises(UsageError, match="did not finish"):
        compare_runs(base, cut)
    (tmp_path / "c").mkdir()
    with pytest.raises(UsageError, match="not a gymgate run folder"):
        compare_runs(base, tmp_path / "c")
    assert main(["compare", str(base), str(tmp_path / "c")]) == 2


def test_outputs_results_junit_retry_and_html(tmp_path):
    from junitparser import JUnitXml

    from gymgate.report.html import write_html
    from gymgate.report.outputs import write_junit, write_results, write_retry

    base = stored_run(tmp_path, "a", "0.3.0", [record("mcqa:accepted", "PASS"), record("mcqa:rejected", "PASS")])
    cand = stored_run(
        tmp_path,
        "b",
        "0.4.0",
        [
            record("mcqa:accepted", "FAIL", reason="[reward] r"),
            record("mcqa:rejected", "ERROR", reason="infrastructure: x", blame="harness"),
        ],
    )
    comparison = compare_runs(base, cand)
    out = tmp_path / "out"
    out.mkdir()
    results = json.loads(write_results(comparison, out).read_text())
    assert results["exit_code"] == 1
    assert results["provenance"]["baseline"]["version"] == "0.3.0"
    assert len(results["provenance"]["candidate"]["lock_sha256"]) == 64
    assert [p["category"] for p in results["paths"]] == ["regressed", "unjudged"]
    suites = list(JUnitXml.fromfile(str(write_junit(comparison, out))))
    assert [(s.name, s.tests, s.failures, s.errors) for s in suites] == [
        ("comparison 0.3.0 -> 0.4.0", 2, 1, 1),
        ("baseline 0.3.0", 2, 0, 0),
        ("candidate 0.4.0", 2, 1, 1),
    ]
    assert write_retry(comparison, out).read_text() == "mcqa:accepted\nmcqa:rejected\n"
    page = write_html(comparison, out, "report.html").read_text()
    assert '<header class="banner fail" id="verdict">' in page and "1 regressed, 0 broken, 1 unjudged" in page
    assert '<section class="card bad" id="path-mcqa-accepted">' in page  # tests/browser/ reads it as a person would
    assert '<p class="refs" id="rl">Judged as NeMo RL main after RL#4014' in page  # which RL it speaks for
    assert not re.search(r"""(src|href)=["']?(https?:)?//|@import|url\(""", page)  # self-contained: nothing to fetch


def test_paths_option_validates_ids(tmp_path, capsys, cache):
    retry = tmp_path / "retry.txt"
    retry.write_text("mcqa:accepted\nnope:accepted\n")
    assert main(["accept", "--gym-ref", "0.4.0", "--paths", f"@{retry}", "--runs-dir", str(tmp_path / "runs")]) == 2
    assert "unknown path(s) nope:accepted" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists() and not (cache / "envs").exists()  # refused before anything was built


def test_folders_of_another_version_or_damaged_are_refused_with_exit_2(tmp_path, capsys):
    base = stored_run(tmp_path, "a", "0.4.0", [record("mcqa:accepted", "PASS")])
    old = stored_run(tmp_path, "b", "0.4.0", [record("mcqa:accepted", "PASS")])
    mark = json.loads((old / "run.json").read_text())
    del mark["schema"]  # a folder from before run folders carried a schema version
    (old / "run.json").write_text(json.dumps(mark))
    assert main(["compare", str(base), str(old)]) == 2
    assert "was written by another version of gymgate" in capsys.readouterr().err
    # A record under another path's name is damaged: that path cannot be judged (exit 2), never a pass.
    moved = stored_run(tmp_path, "c", "0.4.0", [record("mcqa:accepted", "PASS")])
    (moved / "paths" / "mcqa-accepted.json").rename(moved / "paths" / "mcqa-rejected.json")
    comparison = compare_runs(base, moved)
    assert comparison.exit_code == EXIT_UNJUDGED
    assert {p.path: p.category for p in comparison.paths}["mcqa:rejected"] == "unjudged"
    # Missing or unparsable run files: refused with the file named, exit 2, never a traceback.
    capsys.readouterr()
    (moved / "source.json").unlink()
    assert main(["compare", str(base), str(moved)]) == 2
    assert "is damaged: it has no source.json" in capsys.readouterr().err
    good = stored_run(tmp_path, "d", "0.4.0", [record("mcqa:accepted", "PASS")])
    assert main(["compare", str(base), str(good)]) == 0
    (base / "workers").mkdir()
    (base / "workers" / "gw0.json").write_text("{cut")
    assert main(["compare", str(base), str(good)]) == 2
    assert "gw0.json is damaged" in capsys.readouterr().err
    (base / "run.json").write_text("[]")
    assert main(["compare", str(base), str(good)]) == 2
    assert "was written by another version of gymgate" in capsys.readouterr().err
