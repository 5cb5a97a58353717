"""`gymgate case new` on the real 0.4.0 Gym: drafting mcqa from nothing but its name gives the hand-written case
(config, servers, pinned row, scripts, expected reward and verifier answer), marked [draft] so accept refuses it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib

from gymgate.cases.environments import cases_dir


def test_drafting_mcqa_gives_the_hand_written_case(tmp_path):
    cases = tmp_path / "cases"
    shutil.copytree(cases_dir(), cases)
    written = tomllib.loads((cases / "mcqa.toml").read_text())
    (cases / "mcqa.toml").unlink()
    env = {**os.environ, "GYMGATE_CASES_DIR": str(cases)}
    command = [sys.executable, "-m", "gymgate", "case", "new", "mcqa", "--gym-ref", "0.4.0"]
    done = subprocess.run(
        [*command, "--runs-dir", str(tmp_path / "runs")], env=env, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stdout + done.stderr
    drafted = tomllib.loads((cases / "mcqa.toml").read_text())
    assert drafted["environment"] == {k: v for k, v in written["environment"].items() if k != "judge_markers"}
    assert drafted["row"] == written["row"]
    for mode in ("accepted", "rejected"):
        assert [t["content"] for t in drafted[mode]["turns"]] == [t["content"] for t in written[mode]["turns"]]
        assert drafted[mode]["expect"]["reward"] == written[mode]["expect"]["reward"]
        assert drafted[mode]["expect"]["extracted_answer"] == written[mode]["expect"]["extracted_answer"]
    assert "review the scripts" in drafted["draft"]["why"]
    refused = subprocess.run(
        [sys.executable, "-m", "gymgate", "accept", "--gym-ref", "0.4.0", "--env", "mcqa"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode == 2 and "unreviewed drafted case(s): mcqa" in refused.stderr
    again = subprocess.run(
        [*command, "--runs-dir", str(tmp_path / "runs")], env=env, capture_output=True, text=True, timeout=120
    )
    assert again.returncode == 2 and "exists" in again.stderr  # a draft is replaced only with --force
