"""Bisection's search and judgement (harness/bisection.py, harness/bisect.py) with fake commits; the real thing is in
tests/integration/test_bisect.py."""

from __future__ import annotations

import json

import pytest

from gymgate.harness import bisect as b
from gymgate.harness import bisection as bs


def _search(n, first_bad, skipped=(), flaky=()):
    tried = []

    def judge(i):
        tried.append(i)
        verdict = bs.SKIP if i in skipped else bs.FLAKY if i in flaky else bs.BAD if i >= first_bad else bs.GOOD
        return b.Step(f"c{i}", "", verdict, "")

    lo, hi, steps, skipped_found = bs.search([f"c{i}" for i in range(n)], judge)
    return lo, hi, tried, skipped_found


@pytest.mark.parametrize("first_bad", [0, 1, 31, 62, 63])
def test_binary_search_names_the_first_bad_commit_in_log_steps(first_bad):
    lo, hi, tried, _ = _search(64, first_bad)
    assert (lo, hi) == (first_bad - 1, first_bad)
    assert len(tried) <= 6 and len(set(tried)) == len(tried)  # 64 commits: at most log2(64) steps, none twice


def test_unbuildable_and_flaky_commits_are_skipped_and_searched_around():
    lo, hi, tried, skipped = _search(20, 11, skipped={9, 10}, flaky={4})
    assert (lo, hi) == (8, 11) and {9, 10} <= skipped  # the skipped commits between stay suspects
    lo, hi, tried, skipped = _search(20, 11, skipped={9, 14})
    assert (lo, hi) == (10, 11)  # skips away from the boundary cost a step, never the answer


class FakeBisector(b.Bisector):
    """Attempts come from a script instead of real runs."""

    def __init__(self, verdicts):
        super().__init__(None, ["mcqa:accepted"], None, "repo")
        self.verdicts = list(verdicts)
        self.fresh = []

    def lacking(self, source):
        return []

    def run(self, source, fresh=False):
        self.fresh.append(fresh)
        return b.RunResult(dir=f"run{len(self.fresh)}", code=0)


@pytest.mark.parametrize(
    ("attempts", "verdict", "runs"),
    [
        ([bs.BAD], bs.BAD, 1),  # a clear first attempt decides
        ([bs.GOOD], bs.GOOD, 1),
        ([bs.UNSURE, bs.BAD, bs.BAD], bs.BAD, 3),  # after an unsure one: two clear attempts that agree
        ([bs.UNSURE, bs.GOOD, bs.BAD], bs.FLAKY, 3),  # attempts disagree: flaky, never guessed
        ([bs.UNSURE, bs.UNSURE, bs.GOOD], bs.FLAKY, 3),  # not enough clear attempts
    ],
)
def test_unsure_commits_are_rerun_fresh_until_attempts_agree(monkeypatch, attempts, verdict, runs):
    script = iter(attempts)
    monkeypatch.setattr(b, "resolve_ref", lambda commit, repo: None)
    monkeypatch.setattr(b, "compare_runs", lambda good, run, acks: None)
    monkeypatch.setattr(b, "commit_verdict", lambda comparison, paths: (next(script), "why"))
    fake = FakeBisector(attempts)
    got, _, dirs = fake.judge("c")
    assert (got, len(dirs)) == (verdict, runs)
    assert fake.fresh == [False] + [True] * (runs - 1)  # reruns never come from the cache


def test_the_report_names_the_first_bad_commit_its_files_and_every_step(tmp_path):
    from gymgate.refs.source import GymSource
    from gymgate.report.bisect import render_bisect_markdown, write_bisect_reports

    def git_source(sha, ref):
        extra = {"ref": ref, "ref_kind": "tag", "subject": f"release {ref}"}
        return GymSource(f"git-{sha[:12]}", "git", "0.4.0", ">=3.12", sha, "repo", commit=sha, extra=extra)

    good, bad = "a" * 40, "f" * 40
    steps = [
        b.Step("c" * 40, "build: drop it", bs.GOOD, "every chosen path as on the good ref"),
        b.Step("d" * 40, "mcqa: compare case-insensitively", bs.BAD, "mcqa:accepted: regressed [reward] reward"),
    ]
    result = b.BisectResult(
        git_source(good, "v1"),
        git_source(bad, "v2"),
        ["mcqa:accepted"],
        ["c" * 40, "d" * 40, bad],
        steps,
        "c" * 40,
        "d" * 40,
        ["d" * 40],
        {"c" * 40: tmp_path / "c", "d" * 40: tmp_path / "d"},
    )
    info = {"d" * 40: {"subject": "mcqa: compare case-insensitively", "date": "2026-11-01T10:00:00+00:00"}}
    text = render_bisect_markdown(result, info, ["resources_servers/mcqa/app.py"], tmp_path / "report")
    assert "**first bad commit: dddddddddddd (last good: cccccccccccc)**" in text
    assert "- author date: 2026-11-01T10:00:00+00:00" in text
    assert "`resources_servers/mcqa/app.py`" in text
    assert (
        "| 2 | `dddddddddddd` | mcqa: compare case-insensitively | bad | mcqa:accepted: regressed [reward] reward |"
        in text
    )
    assert '0.4.0 (git v1 = aaaaaaaaaaaa "release v1")' in text.splitlines()[0]
    md, data = write_bisect_reports(result, info, ["resources_servers/mcqa/app.py"], None, tmp_path)
    assert json.loads(data.read_text())["first_bad"]["touched"] == ["resources_servers/mcqa/app.py"]
