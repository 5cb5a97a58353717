"""A kind of path written only for the tests (tests/dummy_kind.py: `echo`) runs through a real `gymgate accept` on
real Gym 0.7.0 services: the harness plans it (it is declared in a copy of the declarations file, nothing else of
gymgate knows it), the plan crosses to the session as values, the session's runner runs it as any path, its own
check runs, and its record and report come out like any other path's."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from gymgate.runfolder import RunFolder
from gymgate.runfolder.folder import PLAN
from tests import dummy_kind

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_a_kind_written_only_in_a_test_runs_on_real_gym(tmp_path):
    declared = dummy_kind.declare(tmp_path)
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")]),
        PYTEST_PLUGINS="tests.dummy_kind",  # the session and its workers register it as the harness does
        **{dummy_kind.DECLARED_VAR: str(declared)},
    )
    runs = tmp_path / "runs"
    harness = "import sys, tests.dummy_kind; from gymgate.cli import main; sys.exit(main(sys.argv[1:]))"
    command = [sys.executable, "-c", harness, "accept", "--gym-ref", "0.7.0", "--no-baseline", "--env", "mcqa"]
    command += ["--no-replays", "--faults", "none", "--variants", "none", "--runs-dir", str(runs), "--json"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, env=env, cwd=REPO)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (run,) = (RunFolder(p) for p in runs.iterdir() if p.is_dir() and (p / PLAN).is_file())
    assert [p["id"] for p in run.plan()] == ["mcqa:accepted", "mcqa:rejected", "mcqa:echo.2"]
    echo = run.records()["mcqa:echo.2"]
    assert echo.outcome == "PASS", echo.reason
    assert echo.reward == 1.0 and echo.tokens and echo.request_contract  # every check of a path ran on it
    assert len(echo.repeats) == 1  # attempted twice, as any path
    document = json.loads(done.stdout)
    assert {p["path"]: p["outcome"] for p in document["paths"]}["mcqa:echo.2"] == "PASS"
