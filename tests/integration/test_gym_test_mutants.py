"""Gym's own tests as an oracle (`accept --gym-tests`), on real Gyms: 0.7.0's sdist as a local checkout judged against
the 0.7.0 pin, with one verifier change a 0.7.0 test pins (math_with_judge takes the first boxed answer instead of
the last; the tests untouched). Exactly that test is newly failing, named with its assertion; every other test of
0.7.0's servers passes on both (the sdist as a checkout and the wheel pin agree: no false alarm, as the unchanged
sdist alone showed: docs/benchmarks.md); the gate exits 1 until a reviewed entry covers it, and `gymgate ack` drafts
that entry."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.integration.mutation import build_mutant

ENV = "math_with_judge"
PINNED = "resources_servers/math_with_judge/tests/test_app.py::TestApp::test_extract_last_boxed_answer"
MUTANT = {
    "version": "0.7.0",
    "file": "resources_servers/math_with_judge/app.py",
    "line": '    boxed_start = response.rfind("\\\\boxed{")',
    "new": '    boxed_start = response.find("\\\\boxed{")',
}


def accept(gym: Path, runs: Path, acks: Path) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "gymgate", "accept", "--gym-ref", str(gym), "--baseline", "0.7.0"]
    command += ["--env", ENV, "--paths", f"{ENV}:accepted,{ENV}:rejected", "--gym-tests", "envs", "-n", "1"]
    command += ["--runs-dir", str(runs), "--acks", str(acks), "--reruns", "0", "--json"]
    return subprocess.run(command, capture_output=True, text=True, timeout=1500)


def test_gym_tests_name_exactly_the_test_a_change_breaks(tmp_path):
    gym = build_mutant(MUTANT, tmp_path / "gym")
    runs, acks = tmp_path / "runs", tmp_path / "acks"
    done = accept(gym, runs, acks)
    out = done.stdout + done.stderr
    assert done.stdout.startswith("{"), out[-3000:]
    document = json.loads(done.stdout)
    tests = document["gym_tests"]["tests"]
    ours = [t for t in tests if t["of"] == "baseline"]
    passing = [t for t in ours if t["category"] == "pass on both"]
    assert len(passing) > 300, out  # the servers' tests of 0.7.0 ran on both sides
    failing = [t for t in ours if t["category"] in ("newly failing", "cannot import", "unjudged")]
    assert done.returncode == 1, out
    assert [t["test"] for t in failing] == [PINNED], failing
    assert "assert" in failing[0]["why"] and not failing[0].get("diff"), failing  # the test file is the same
    assert f"{ENV}: 1 of " in done.stderr and "test_extract_last_boxed_answer" in done.stderr, out
    assert {p["category"] for p in document["paths"]} == {"same-pass"}  # the hand-written paths do not see it

    candidate = Path(document["gym_tests"]["folder"]).parent
    drafted = subprocess.run(
        [sys.executable, "-m", "gymgate", "ack", str(candidate), "--acks", str(acks)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert drafted.returncode == 0, drafted.stdout + drafted.stderr
    (file,) = acks.glob("*.toml")
    text = file.read_text()
    assert f'test = "{PINNED}"' in text and "failure = " in text, text
    file.write_text(text.replace('reason = ""', 'reason = "takes the first boxed answer on purpose"'))
    again = accept(gym, runs, acks)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "1 reviewed" in json.loads(again.stdout)["gym_tests"]["verdict"]
