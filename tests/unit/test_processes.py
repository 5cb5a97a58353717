"""The run-marker sweep finds exactly the run's processes and stops even stubborn ones."""

from __future__ import annotations

import os
import subprocess
import sys

from gymgate.processes import RUN_MARKER, marked_pids, sweep, wait_gone

STUBBORN = (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); time.sleep(600)"
)


def _spawn(run_id: str, code: str = "import time; time.sleep(600)") -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        env={**os.environ, RUN_MARKER: run_id},
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    return proc


def test_sweep_stops_only_this_runs_processes():
    mine = _spawn("run-a")
    stubborn = _spawn("run-a", STUBBORN)
    assert stubborn.stdout.readline().strip() == "ready"
    other = _spawn("run-b")
    try:
        assert marked_pids("run-a") == sorted([mine.pid, stubborn.pid])
        assert sweep("run-a", grace_s=0.5) == sorted([mine.pid, stubborn.pid])
        assert wait_gone(mine.pid, 5) and wait_gone(stubborn.pid, 5)
        assert marked_pids("run-a") == []
        assert marked_pids("run-b") == [other.pid]
    finally:
        other.kill()
        for proc in (mine, stubborn, other):
            proc.wait(timeout=5)


def test_sweep_of_a_clean_run_finds_nothing():
    assert sweep("never-started", grace_s=0.1) == []
