"""The run-marker sweep finds exactly the run's processes and stops even stubborn ones."""

from __future__ import annotations

import os
import shutil
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


def test_a_runs_temp_folders_are_removed_by_its_id_and_once_stale(monkeypatch):
    """The folders a run makes under /tmp carry its id: the harness removes a killed run's (by id), and a run's start
    removes those of runs with no process left — never one whose run still has a process, nor an unmarked one."""
    from gymgate import processes

    made = {}
    for run_id in ("run-gone", "run-live", ""):
        monkeypatch.setenv(RUN_MARKER, run_id)
        made[run_id] = processes.run_temp_dir("t-")
    monkeypatch.delenv(RUN_MARKER)
    live = _spawn("run-live")
    try:
        assert str(made["run-gone"]).startswith("/tmp/ggt-") and len(str(made["run-gone"])) < 30
        assert made["run-gone"] in processes.remove_stale_temp_dirs()  # (and any other killed run's on this machine)
        assert not made["run-gone"].exists()
        assert made["run-live"].is_dir() and made[""].is_dir()  # its run lives; unmarked: never anyone's to remove
        assert processes.temp_dirs("run-live") == [made["run-live"]]
        assert processes.remove_temp_dirs("run-live") == [made["run-live"]] and not made["run-live"].exists()
    finally:
        live.kill()
        live.wait(timeout=5)
        for path in made.values():
            shutil.rmtree(path, ignore_errors=True)


SPAWNS_AS_IT_STOPS = """
import os, signal, subprocess, sys, time
def stop(signum, frame):
    late = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    print(late.pid, flush=True)
    os._exit(0)
signal.signal(signal.SIGTERM, stop)
print("ready", flush=True)
time.sleep(600)
"""


def test_sweep_also_stops_what_the_run_starts_while_it_stops():
    """A process of the run that starts another as it stops (a zygote finishing a fork when the sweep's SIGTERM
    lands): the newcomer was not there when the sweep looked first, and is stopped all the same."""
    parent = _spawn("run-c", SPAWNS_AS_IT_STOPS)
    assert parent.stdout.readline().strip() == "ready"
    try:
        swept = sweep("run-c", grace_s=2.0)
        late = int(parent.stdout.readline())
        assert swept == [parent.pid, late]
        assert wait_gone(late, 5)
        assert marked_pids("run-c") == []
    finally:
        for pid in marked_pids("run-c"):
            os.kill(pid, 9)
        parent.wait(timeout=5)


def test_sweep_finds_a_process_that_lost_its_marker_by_the_files_it_holds_in_the_runs_folder():
    """Ray's agents retitle themselves and /proc shows no environment for them: the log files they keep open in the
    run's Ray session (removed or not) still tie them to the run."""
    from gymgate.processes import remove_temp_dirs, run_temp_dir

    folder = run_temp_dir("t", "run-held")
    holder_code = (
        "import os, sys, time; f = open(sys.argv[1], 'w'); os.remove(sys.argv[1]); print('ready', flush=True);"
        " time.sleep(600)"
    )
    unmarked = {k: v for k, v in os.environ.items() if k != RUN_MARKER}
    spawn = lambda target: subprocess.Popen(  # noqa: E731 - two of the same
        [sys.executable, "-c", holder_code, str(target)],
        env=unmarked,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    holder = spawn(folder / "agent.log")
    elsewhere = spawn(folder.parent / f"{folder.name}-not-the-run.log")
    try:
        assert holder.stdout.readline().strip() == "ready" and elsewhere.stdout.readline().strip() == "ready"
        assert marked_pids("run-held") == [holder.pid]
        assert sweep("run-held", grace_s=0.5) == [holder.pid]
        assert wait_gone(holder.pid, 5) and elsewhere.poll() is None
    finally:
        holder.kill()
        elsewhere.kill()
        remove_temp_dirs("run-held")
