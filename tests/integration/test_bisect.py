"""Bisect on a real git history built here from the index's 0.4.0 sdist: unrelated commits, a commit that cannot be
built (an unsatisfiable dependency), the commit that repairs it, the one that breaks mcqa's verifier, and more
unrelated commits after it. `gymgate bisect` must name the defect's commit, skip the unbuildable one, and say why
each step went the way it did."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from gymgate.refs.index import cached_sdist as sdist
from gymgate.refs.index import unpack_sdist as unpack
from gymgate.refs.scratch import commit_all, git
from gymgate.runfolder import RunFolder

MCQA = "resources_servers/mcqa/app.py"
VERDICT_LINE = "        is_correct = (pred == gold) if (pred is not None and gold) else False\n"


def _history(repo):
    """(good, commits after it): index 2 cannot be built, index 3 repairs it, index 4 is the defect."""
    repo.mkdir()
    git(repo, "init", "-q")
    unpack(sdist("0.4.0"), repo)
    good = commit_all(repo, "nemo-gym 0.4.0 sdist")
    pyproject = repo / "pyproject.toml"
    original = pyproject.read_text()
    app = repo / MCQA

    def unrelated(n):
        (repo / "docs-gymgate-test.md").write_text(f"note {n}\n")
        return commit_all(repo, f"docs: note {n}")

    commits = [unrelated(1), unrelated(2)]
    assert original.count("\ndependencies = [\n") == 1, "nemo-gym's pyproject changed upstream; update this test"
    broken = original.replace("\ndependencies = [\n", '\ndependencies = [\n    "nemo-gym-no-such-dependency==9.9.9",\n')
    pyproject.write_text(broken)
    commits.append(commit_all(repo, "build: depend on a package that does not exist"))
    pyproject.write_text(original)
    commits.append(commit_all(repo, "build: drop it again"))
    text = app.read_text()
    assert text.count(VERDICT_LINE) == 1, "mcqa's verifier changed upstream; update this test"
    app.write_text(text.replace(VERDICT_LINE, VERDICT_LINE.replace("(pred == gold)", "(pred == gold.lower())")))
    commits.append(commit_all(repo, "mcqa: compare answers case-insensitively"))
    commits += [unrelated(3), unrelated(4)]
    return good, commits


def test_bisect_names_the_commit_that_broke_mcqa_skipping_the_unbuildable_one(tmp_path):
    repo = tmp_path / "gym"
    good, commits = _history(repo)
    out = tmp_path / "bisect"
    command = [sys.executable, "-m", "gymgate", "bisect", "--good", good, "--bad", commits[-1]]
    command += ["--gym-repo", str(repo), "--env", "mcqa", "-n", "1", "--runs-dir", str(tmp_path / "runs")]
    command += ["--no-replays"]  # bisect's own mechanics, on the hand-written paths (the replays would regress too)
    done = subprocess.run([*command, "--out", str(out)], capture_output=True, text=True, timeout=2400)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert f"first bad commit: {commits[4][:12]} (last good: {commits[3][:12]})" in output
    result = json.loads((out / "bisect.json").read_text())
    assert result["paths"] == ["mcqa:accepted"]  # only the accepted path regresses (the rejected one still earns 0)
    assert result["first_bad"]["commit"] == commits[4]
    assert result["first_bad"]["subject"] == "mcqa: compare answers case-insensitively"
    assert result["first_bad"]["touched"] == [MCQA]
    steps = {s["commit"]: s["verdict"] for s in result["steps"]}
    assert steps[commits[2]] == "skip" and steps[commits[3]] == "good" and steps[commits[4]] == "bad", steps
    assert len(steps) == 3  # 7 commits: the skip costs one step, nothing is tried twice
    report = out / "last-good-to-first-bad" / "report.md"
    assert "- `mcqa:accepted`: PASS → FAIL" in report.read_text()
    # Each step ran only the chosen path's environment.
    for step in result["steps"]:
        for run in step["runs"]:
            mark = RunFolder(Path(run)).mark()
            assert mark.expected == ["mcqa:accepted"], run
