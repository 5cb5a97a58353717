"""`bisect --gym-test` on a real git history built here from the index's 0.7.0 sdist: unrelated commits, the commit
that makes math_with_judge take the first boxed answer instead of the last (its tests untouched), more after it.
The good ref's own test that pins the last boxed answer must name that commit."""

from __future__ import annotations

import json
import subprocess
import sys

from gymgate.refs.index import cached_sdist as sdist
from gymgate.refs.index import unpack_sdist as unpack
from gymgate.refs.scratch import commit_all, git

BOXED = "resources_servers/math_with_judge/app.py"
LAST_BOXED = '    boxed_start = response.rfind("\\\\boxed{")'
PINNED = "resources_servers/math_with_judge/tests/test_app.py::TestApp::test_extract_last_boxed_answer"


def test_bisect_by_one_of_gyms_own_tests_names_the_commit_that_broke_it(tmp_path):
    """`bisect --gym-test`: the good ref's test, as it wrote it, against each commit's code (0.7.0's sdist, then a
    commit taking the first boxed answer instead of the last, tests untouched)."""
    repo = tmp_path / "gym"
    repo.mkdir()
    git(repo, "init", "-q")
    unpack(sdist("0.7.0"), repo)
    good = commit_all(repo, "nemo-gym 0.7.0 sdist")
    commits = []
    for n in (1, 2):
        (repo / "docs-gymgate-test.md").write_text(f"note {n}\n")
        commits.append(commit_all(repo, f"docs: note {n}"))
    app = repo / BOXED
    assert app.read_text().count(LAST_BOXED + "\n") == 1, "math_with_judge changed upstream; update this test"
    app.write_text(app.read_text().replace(LAST_BOXED, LAST_BOXED.replace("rfind", "find")))
    commits.append(commit_all(repo, "math_with_judge: take the first boxed answer"))
    (repo / "docs-gymgate-test.md").write_text("note 3\n")
    commits.append(commit_all(repo, "docs: note 3"))
    out = tmp_path / "bisect"
    command = [sys.executable, "-m", "gymgate", "bisect", "--good", good, "--bad", commits[-1], "--gym-test", PINNED]
    command += ["--gym-repo", str(repo), "--runs-dir", str(tmp_path / "runs"), "--out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=2400)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert f"first bad commit {commits[2]}" in output, output
    result = json.loads((out / "bisect-gym-test.json").read_text())
    steps = {s["commit"]: (s["verdict"], s["why"]) for s in result["steps"]}
    assert steps[commits[2]][0] == "bad" and "assert" in steps[commits[2]][1], steps
    assert steps[commits[1]][0] == "good", steps
