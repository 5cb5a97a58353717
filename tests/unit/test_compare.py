"""Comparing two stored runs: categories per path, changed fields on pass-pass paths, the lock diff, the
verdict and exit code, and report.md with the verdict first."""

from __future__ import annotations

import json
import shutil

import pytest

from gymgate.cli import main
from gymgate.compare.runs import compare_runs
from gymgate.errors import UsageError
from gymgate.paths import envs_dir
from gymgate.report.markdown import render_markdown


def _record(path, outcome, **fields):
    env, mode = path.split(":")
    return {
        "path": path,
        "env": env,
        "mode": mode,
        "outcome": outcome,
        "reason": fields.pop("reason", ""),
        "reward": 1.0 if mode == "accepted" else 0.0,
        "verifier": {},
        "tokens": {},
        "request_contract": {},
        "tools": {},
        "result_fields": [],
        **fields,
    }


def _run(root, name, pin, records, complete=True):
    run = root / name
    (run / "paths").mkdir(parents=True)
    (run / "source.json").write_text(json.dumps({"name": pin, "version": pin}))
    (run / "run.json").write_text(json.dumps({"complete": complete}))
    shutil.copyfile(envs_dir() / pin / "uv.lock", run / "uv.lock")
    for record in records:
        (run / "paths" / f"{record['env']}-{record['mode']}.json").write_text(json.dumps(record))
    return run


def test_categories_changes_locks_and_verdict(tmp_path):
    base = _run(
        tmp_path,
        "a",
        "0.3.0",
        [
            _record("mcqa:accepted", "PASS", request_contract={"top_logprobs": ['"<missing>"']}),
            _record("mcqa:rejected", "PASS"),
            _record("code_gen:accepted", "PASS"),
            _record("structured_outputs_v4:accepted", "SKIP"),
        ],
    )
    cand = _run(
        tmp_path,
        "b",
        "0.4.0",
        [
            _record("mcqa:accepted", "PASS", request_contract={"top_logprobs": ["0"]}),
            _record("mcqa:rejected", "PASS"),
            _record("code_gen:accepted", "FAIL", reason="[reward] reward: expected 1.0, got 0.0"),
            _record("structured_outputs_v4:accepted", "PASS"),
        ],
    )
    comparison = compare_runs(base, cand)
    categories = {p.path: p.category for p in comparison.paths}
    assert categories == {
        "mcqa:accepted": "same-pass",
        "mcqa:rejected": "same-pass",
        "code_gen:accepted": "regressed",
        "structured_outputs_v4:accepted": "new path",
    }
    (changed,) = comparison.changed
    assert changed.path == "mcqa:accepted"
    assert changed.changed["request_contract.top_logprobs"] == ({"removed": ['"<missing>"']}, {"added": ["0"]})
    assert comparison.locks.highlighted["nemo-gym"] == ("0.3.0", "0.4.0")
    assert comparison.exit_code == 1
    report = render_markdown(comparison)
    assert report.splitlines()[2] == "**Verdict: 1 regressed, 0 broken.**"
    assert "- **nemo-gym**: 0.3.0 → 0.4.0" in report
    assert "- `code_gen:accepted`: PASS → FAIL — [reward] reward: expected 1.0, got 0.0" in report
    assert "request_contract.top_logprobs" in report


def test_clean_bump_exits_0_and_cli_writes_the_report(tmp_path, capsys):
    base = _run(tmp_path, "a", "0.4.0", [_record("mcqa:accepted", "PASS")])
    cand = _run(tmp_path, "b", "0.4.0", [_record("mcqa:accepted", "PASS")])
    assert main(["compare", str(base), str(cand)]) == 0
    assert (cand / "report.md").read_text().splitlines()[2].startswith("**Verdict: no regression")
    assert "No package changes." in capsys.readouterr().out


def test_interrupted_or_foreign_folders_are_refused(tmp_path):
    base = _run(tmp_path, "a", "0.4.0", [_record("mcqa:accepted", "PASS")])
    cut = _run(tmp_path, "b", "0.4.0", [], complete=False)
    with pytest.raises(UsageError, match="interrupted run"):
        compare_runs(base, cut)
    (tmp_path / "c").mkdir()
    with pytest.raises(UsageError, match="not a gymgate run folder"):
        compare_runs(base, tmp_path / "c")
    assert main(["compare", str(base), str(tmp_path / "c")]) == 2
