"""Results where CI shows them (ci/github.py) and the GYMGATE_* variables (gymgate/options.py): the job summary, one
annotation per path a reviewer must look at, log groups only under Actions, `--json` alone on stdout."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gymgate.ci import github
from gymgate.cli import build_parser, main
from gymgate.compare.runs import Comparison, PathComparison
from gymgate.errors import UsageError
from gymgate.verdict import CATEGORIES, FLAKY
from tests.helpers import record, stored_run

ERRORS = {"regressed", "broken", "changed", "unjudged"}


@pytest.fixture
def outside_ci(monkeypatch):
    monkeypatch.delenv(github.ACTIONS_VAR, raising=False)
    monkeypatch.delenv(github.SUMMARY_VAR, raising=False)


def _every_category() -> Comparison:
    paths = [
        PathComparison(f"env{i}:accepted", "PASS", "FAIL", category, reason="verifier said 0.0\nmore", blame="gym")
        for i, category in enumerate(CATEGORIES)
    ]
    paths[CATEGORIES.index(FLAKY)].flaky_on = "candidate"
    return Comparison({"name": "0.3.0"}, {"name": "0.4.0"}, paths, None, lifecycle={"candidate": ["mcqa: hung"]})


def test_commands_escape_what_would_end_or_split_them():
    line = github.command("error", "50% done\nnext: line", title="a:b, c")
    assert line == "::error title=a%3Ab%2C c::50%25 done%0Anext: line"


def test_each_path_to_look_at_gets_one_annotation_of_its_level(monkeypatch):
    lines = github.comparison_annotations(_every_category())
    by_path = {}
    for line in lines:
        level, _, rest = line[2:].partition(" ")
        title = rest.split("::", 1)[0].removeprefix("title=")
        by_path.setdefault(title, []).append(level)
    expected = {f"gymgate%3A env{i}%3Aaccepted {c}": ["error"] for i, c in enumerate(CATEGORIES) if c in ERRORS}
    expected[f"gymgate%3A env{CATEGORIES.index(FLAKY)}%3Aaccepted flaky"] = ["warning"]
    expected["gymgate%3A lifecycle"] = ["error"]
    assert by_path == expected  # same-pass, fixed, new path, same-fail, skipped, removed: no annotation
    regressed = next(line for line in lines if "regressed" in line)
    assert "verifier said 0.0" in regressed and "more" not in regressed  # the reason's first line, escaped


def test_annotations_are_one_per_root_cause_and_never_more_than_github_shows(monkeypatch, tmp_path):
    """Thirty paths with one cause are one annotation; twenty-five causes are ten, the tenth counting the rest (GitHub
    drops the eleventh error of a step without a word). Each points at the uv.lock line that pins Gym."""
    (tmp_path / "uv.lock").write_text('version = 1\n\n[[package]]\nname = "nemo-gym"\nversion = "0.7.0"\n')
    monkeypatch.setenv(github.WORKSPACE_VAR, str(tmp_path))
    same = [
        PathComparison(f"e{n}:accepted", "PASS", "FAIL", "regressed", causes=["[reward] 1.0 → 0.0"]) for n in range(30)
    ]
    lines = github.comparison_annotations(Comparison({"name": "a"}, {"name": "b"}, same, None))
    assert len(lines) == 1 and "(30 paths)" in lines[0] and "file=uv.lock,line=4" in lines[0], lines
    many = [
        PathComparison(f"e{n}:accepted", "PASS", "FAIL", "regressed", causes=[f"[gym] cause {n}"]) for n in range(25)
    ]
    lines = github.comparison_annotations(Comparison({"name": "a"}, {"name": "b"}, many, None))
    assert len(lines) == github.MAX_PER_LEVEL == 10
    assert "16 more root causes on 16 paths" in lines[-1] and all(line.startswith("::error ") for line in lines)
    monkeypatch.setenv(github.WORKSPACE_VAR, str(tmp_path / "elsewhere"))  # no uv.lock: no anchor, still annotated
    assert "file=" not in github.comparison_annotations(Comparison({"name": "a"}, {"name": "b"}, same, None))[0]


def test_run_annotations_name_every_path_that_did_not_pass():
    records = [record("mcqa:accepted", "PASS"), record("mcqa:rejected", "FAIL", reason="reward 1.0 != 0.0")]
    records.append(record("code_gen:accepted", "SKIP", reason="not in this Gym"))
    lines = github.run_annotations(records)
    assert len(lines) == 1 and lines[0].startswith("::error title=gymgate%3A mcqa%3Arejected FAIL::")


def test_nothing_of_ci_appears_outside_it(outside_ci, capsys, tmp_path):
    with github.group("phase"):
        print("inside")
    github.publish("## report", ["::error::x"])
    assert capsys.readouterr().out == "inside\n"


def test_under_actions_groups_fold_and_the_summary_accumulates(monkeypatch, capsys, tmp_path):
    summary = tmp_path / "summary.md"
    monkeypatch.setenv(github.ACTIONS_VAR, "true")
    monkeypatch.setenv(github.SUMMARY_VAR, str(summary))
    with github.group("environment: 0.4.0"):
        print("built")
    with github.group("reruns"), github.group("environment: 0.3.0"):  # the log cannot nest groups: one fold
        print("again")
    github.publish("## first", ["::warning::w"])
    github.publish("## second", [])
    assert capsys.readouterr().out == (
        "::group::environment: 0.4.0\nbuilt\n::endgroup::\n::group::reruns\nagain\n::endgroup::\n::warning::w\n"
    )
    assert summary.read_text() == "## first\n\n## second\n\n"


def test_settings_come_from_the_environment_and_a_flag_wins(monkeypatch):
    monkeypatch.setenv("GYMGATE_WORKERS", "3")
    monkeypatch.setenv("GYMGATE_RERUNS", "0")
    monkeypatch.setenv("GYMGATE_BASELINE", "0.3.0")
    args = build_parser().parse_args(["accept", "--gym-ref", "0.4.0"])
    assert (args.workers, args.reruns, args.baseline) == ("3", 0, "0.3.0")
    args = build_parser().parse_args(
        ["accept", "--gym-ref", "0.4.0", "-n", "1", "--reruns", "2", "--baseline", "0.2.1"]
    )
    assert (args.workers, args.reruns, args.baseline) == ("1", 2, "0.2.1")
    monkeypatch.delenv("GYMGATE_WORKERS")
    assert build_parser().parse_args(["accept", "--gym-ref", "0.4.0"]).workers == "auto"


@pytest.mark.parametrize(("var", "value"), [("GYMGATE_WORKERS", "many"), ("GYMGATE_RERUNS", "11")])
def test_an_unreadable_setting_is_a_usage_error_naming_it(monkeypatch, capsys, var, value):
    monkeypatch.setenv(var, value)
    with pytest.raises(UsageError, match=var):
        build_parser()
    assert main(["accept", "--gym-ref", "0.4.0"]) == 2
    assert var in capsys.readouterr().err


def test_compare_json_is_alone_on_stdout(tmp_path, outside_ci):
    base = stored_run(tmp_path, "base", "0.3.0", [record("mcqa:accepted", "PASS"), record("mcqa:rejected", "PASS")])
    cand = stored_run(tmp_path, "cand", "0.4.0", [record("mcqa:accepted", "PASS"), record("mcqa:rejected", "FAIL")])
    done = subprocess.run(
        [sys.executable, "-m", "gymgate", "compare", str(base), str(cand), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    verdict = json.loads(done.stdout)  # nothing else on stdout
    assert (verdict["kind"], verdict["exit_code"]) == ("comparison", 1)
    assert verdict["verdict"].startswith("1 regressed")
    assert {p["path"]: p["category"] for p in verdict["paths"]} == {
        "mcqa:accepted": "same-pass",
        "mcqa:rejected": "regressed",
    }
    assert verdict["report"]["html"] == str(cand / "report.html")
    assert "Verdict:" in done.stderr  # the human report went to stderr
    results = json.loads((cand / "results.json").read_text())
    assert verdict.pop("schema") == results["schema"] == 1  # both documents say which shape they follow
    assert results["summary"] == verdict


def test_the_pr_comment_fits_github_and_says_where_the_rest_is(monkeypatch):
    """GitHub refuses a comment over 65,536 characters: report.md is cut at a section that fits, never inside one,
    and the cut says where the whole report is (this run's page, whose artifacts hold it)."""
    for var, value in (
        ("GITHUB_SERVER_URL", "https://github.com"),
        ("GITHUB_REPOSITORY", "o/r"),
        ("GITHUB_RUN_ID", "7"),
    ):
        monkeypatch.setenv(var, value)
    small = "## gymgate\n\n**Verdict: no regression.**\n"
    assert github.pr_comment(small) == f"{github.COMMENT_MARKER}\n{small}"
    sections = [f"### section {n}\n\n" + "| a | b |\n|---|---|\n" + "| x | y |\n" * 400 for n in range(30)]
    big = "## gymgate\n\n**Verdict: 1 regressed.**\n\n" + "\n".join(sections)
    comment = github.pr_comment(big)
    assert len(big) > github.COMMENT_LIMIT >= len(comment)
    kept, note = comment.rsplit("\n\n", 1)
    assert kept.rstrip().endswith("| x | y |") and kept.count("### section") < 30
    assert "cut to fit a GitHub comment" in note and "https://github.com/o/r/actions/runs/7" in note
