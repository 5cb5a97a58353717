"""The workflow's own command line, as a CI job runs it: `gymgate accept --gym-ref "$CANDIDATE" --json >
verdict.json` leaves JSON alone in that file (the progress goes to stderr), and `jq` reads the verdict from it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from gymgate.locations import repo_root

WORKFLOW = repo_root() / "examples" / "github-actions" / "gymgate.yml"
PIN = "0.4.0"


def _judge_line() -> str:
    lines = [line.strip() for line in WORKFLOW.read_text().splitlines() if "gymgate accept --" in line]
    assert len(lines) == 1, lines
    return lines[0]


def test_the_workflows_judge_line_under_nox_writes_json_alone(tmp_path):
    line = _judge_line()
    assert re.search(r'--json > "\$RUNNER_TEMP/verdict\.json"$', line), line
    # The workflow installs gymgate as a tool; here it is the harness's own.
    command = line
    env = dict(
        os.environ,
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        CANDIDATE=PIN,
        GYMGATE_BASELINE=PIN,  # the candidate is the baseline: it runs alone
        GYMGATE_ENVS="mcqa",
        GYMGATE_RUNS=str(tmp_path / "runs"),
        GYMGATE_WORKERS="1",
        RUNNER_TEMP=str(tmp_path),
    )
    done = subprocess.run(
        ["bash", "-c", command], cwd=repo_root(), env=env, capture_output=True, text=True, timeout=1500
    )
    verdict_file = tmp_path / "verdict.json"
    text = verdict_file.read_text()
    document = json.loads(text)  # nothing but the verdict: no progress line, no nox line
    assert document["kind"] == "run" and document["exit_code"] == 0, (text[-2000:], done.stderr[-3000:])
    outcomes = {p["path"]: p["outcome"] for p in document["paths"]}
    assert len(outcomes) == 7 and set(outcomes.values()) == {"PASS"}  # mcqa's two cases and its five recordings
    assert {"mcqa:accepted", "mcqa:rejected"} < set(outcomes)
    assert "run " in done.stderr  # the progress went to stderr, not into the file
    read = subprocess.run(["jq", "-r", ".exit_code", str(verdict_file)], capture_output=True, text=True, timeout=60)
    assert read.returncode == 0 and read.stdout.strip() == "0"
