"""Stopping works however a run is stopped, tried as a user or a CI system would: SIGTERM to the nox process (a CI
job cancelled), SIGINT to the whole process group (a terminal's Ctrl-C) and SIGTERM to the gymgate harness alone,
each while the Gyms are starting and while paths are running. Every process the run started must be gone within a
bound, the run folder marked interrupted, and the exit code that of an interrupted run (never 0 or 1)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gymgate.locations import repo_root
from gymgate.processes import marked_pids, temp_dirs
from gymgate.runfolder import RunFolder

STOP_BOUND_S = 200  # gymgate gives its session 60 s, nox waits up to 150 s for gymgate
# An interrupted run exits 130, gymgate's (errors.EXIT_INTERRUPTED) as nox's own.
INTERRUPTED = {"harness": 130, "nox": 130, "group": 130}


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(p) for p in (task / "children").read_text().split()]
    return found


def _start(how: str, runs: Path) -> subprocess.Popen:
    args = ["--gym-ref", "0.4.0", "--no-baseline", "--env", "mcqa", "-n", "1", "--runs-dir", str(runs)]
    if how == "harness":
        command = [sys.executable, "-m", "gymgate", "accept", *args]
    else:
        nox = shutil.which("nox")  # installed by the README's command, as a user has it
        assert nox, "nox is not on PATH"
        command = [nox, "-s", "accept", "--", *args]
    return subprocess.Popen(
        command,
        cwd=repo_root(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: a group signal reaches this run only
        preexec_fn=_as_foreground_job,
    )


def _as_foreground_job() -> None:
    """A terminal's foreground job reacts to Ctrl-C. A job started in the background of a non-interactive shell (as
    a CI script may start this suite) inherits SIGINT ignored, and Python keeps ignoring it: restore the default."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait_for(proc: subprocess.Popen, pattern: str, lines: list[str], timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            break
        lines.append(line)
        if re.search(pattern, line):
            return
    raise AssertionError(f"never saw {pattern!r}:\n{''.join(lines)}")


@pytest.mark.parametrize("moment", ["starting", "running"])
@pytest.mark.parametrize("how", ["nox", "group", "harness"])
def test_a_stopped_run_leaves_nothing_running(tmp_path, how, moment):
    proc = _start(how, tmp_path)
    try:
        _stop_and_check(proc, tmp_path, how, moment)
    finally:
        if proc.poll() is None:  # a failed check must not leave the run going: gymgate's own stop, then force
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(timeout=STOP_BOUND_S)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)


def _first_marked(run_id: str, proc: subprocess.Popen, timeout: float = 120) -> list[int]:
    """The run's first marked processes, polled: a fixed sleep raced the run's end on a fast machine (a shared Gym
    instance serves mcqa's two paths in seconds)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if found := marked_pids(run_id):
            return found
        time.sleep(0.05)
    return []


def _stop_and_check(proc: subprocess.Popen, tmp_path: Path, how: str, moment: str) -> None:
    lines: list[str] = []
    _wait_for(proc, r"^run \w+:", lines)
    run_id = re.search(r"^run (\w+):", "".join(lines), re.M).group(1)
    if moment == "starting":
        _wait_for(proc, r"starting\s+mcqa", lines)
        started = _first_marked(run_id, proc)  # Gym servers are being spawned now
    else:
        _wait_for(proc, r"PASS\s+mcqa:accepted", lines)  # the second path is being rolled out
        started = marked_pids(run_id)
    assert started, "the run had started nothing yet"
    if how == "nox":
        os.kill(proc.pid, signal.SIGTERM)  # what a CI system sends the job's process
    elif how == "group":
        os.killpg(proc.pid, signal.SIGINT)  # a terminal's Ctrl-C
    else:
        os.kill(proc.pid, signal.SIGTERM)  # the harness alone (no nox)
    out, _ = proc.communicate(timeout=STOP_BOUND_S)  # the bound: TimeoutExpired fails the test
    output = "".join(lines) + out
    assert proc.returncode == INTERRUPTED[how], output
    assert "gymgate: interrupted; every process the run started has been stopped" in output
    assert marked_pids(run_id) == [], output
    assert temp_dirs(run_id) == []  # Ray's session folder, the launcher's sockets
    (run_dir,) = tmp_path.iterdir()
    mark = RunFolder(run_dir).mark()
    assert mark.complete is False and mark.incomplete.startswith("interrupted"), mark
