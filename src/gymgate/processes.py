"""Finding and stopping what a run started, by PID and process group only.

Every process a run starts inherits RUN_MARKER=<run id> and RUN_ENVIRONMENT in its environment (Ray daemons, Ray workers,
Gym servers, the endpoint), so the final sweep can find exactly the run's own processes, however they
were spawned, and never touches anything else on the machine. The folders a run makes under /tmp (Ray's session,
the launcher's sockets) carry the run's id too: a run that was killed before it could remove them leaves them to the
harness's sweep, or to the next run's start.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

RUN_MARKER = "GYMGATE_RUN_ID"
# Environment every process of a run gets: no telemetry, no hub downloads, and no token auth between the run's own
# processes, all on loopback: with RAY_AUTH_MODE unset, Ray 2.59 turns token auth on for every new local cluster and
# writes the user's ~/.ray/auth_token when it is missing, and `ray start --head` turns it on whenever that file
# exists. Set explicitly, Ray neither reads nor writes that file.
RUN_ENVIRONMENT = {
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_AUTH_MODE": "disabled",
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    "RAY_DEDUP_LOGS": "0",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "WANDB_MODE": "disabled",
    "UV_PYTHON_DOWNLOADS": "never",
    "UV_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}

# Every variable Ray reads starts so: the user's own (a cluster's address, token, temp dir, tuning) never reach a run.
RAY_VARIABLES = "RAY_"


def run_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` as a run's processes get it: without any of the user's Ray variables (RAY_VARIABLES: an address, a
    token or its file, a temp dir, a namespace that would change the run or join it to another cluster), with
    RUN_ENVIRONMENT."""
    kept = {name: value for name, value in environ.items() if not name.startswith(RAY_VARIABLES)}
    return {**kept, **RUN_ENVIRONMENT}


def _environs() -> Iterator[tuple[int, list[bytes], str]]:
    """Every other live process: its PID, its environment's entries and its state letter."""
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        yield int(entry.name), environ.split(b"\0"), state


def marked_pids(run_id: str, marker: str = RUN_MARKER) -> list[int]:
    """PIDs of live processes whose environment carries this run's marker (excluding this process), or that hold a
    file in one of the run's folders under /tmp: a process that retitles itself (Ray's dashboard and runtime-env
    agents, setproctitle) overwrites the memory /proc shows its environment from, and only its open log files in
    the run's Ray session still say whose it is. `marker`: the variable that carries the run id (a cluster unit
    marks its processes with its own, gymgate.remote.node)."""
    needle = f"{marker}={run_id}".encode()
    folders = [f"{path}/" for path in temp_dirs(run_id)]
    return sorted(
        pid
        for pid, environ, state in _environs()
        if state != "Z" and (needle in environ or (folders and _holds_file_in(pid, folders)))
    )


def _holds_file_in(pid: int, folders: list[str]) -> bool:
    """Whether process `pid` has a file open, or its working directory, under one of `folders` (each ending in /);
    a file removed since still names its path (with " (deleted)")."""
    proc = Path(f"/proc/{pid}")
    try:
        links = [os.readlink(proc / "cwd"), *(os.readlink(fd) for fd in (proc / "fd").iterdir())]
    except OSError:  # gone, or not ours to read
        return False
    return any(link.startswith(folder) for link in links for folder in folders)


def alive(pid: int) -> bool:
    """The process exists and is not a zombie (a child that died but was not reaped yet counts as dead)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def wait_gone(pid: int, timeout_s: float) -> bool:
    """Wait until ``pid`` has exited (or is a zombie); True if it did within the timeout."""
    deadline = time.monotonic() + timeout_s
    while alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> bool:
    """Signal a whole process group; False when it no longer exists."""
    if pgid <= 1 or pgid == os.getpgrp():
        return False
    try:
        os.killpg(pgid, sig)
        return True
    except ProcessLookupError:
        return False


TEMP_ROOT = Path("/tmp")  # short: AF_UNIX socket paths under it stay within 107 bytes
TEMP_PREFIX = "gg"
TEMP_MARK = ".gymgate-run"  # in each such folder: the id of the run it belongs to


def run_temp_dir(tag: str, run_id: str | None = None) -> Path:
    """A new folder `/tmp/gg<tag>…` for this process's run (or for the child run `run_id` it starts), marked with
    the run's id (RUN_MARKER). The process that made it removes it when it is done; remove_temp_dirs /
    remove_stale_temp_dirs remove it if that process was killed first."""
    path = Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{tag}", dir=TEMP_ROOT))
    owner = run_id or os.environ.get(RUN_MARKER)
    if owner:
        (path / TEMP_MARK).write_text(owner)
    return path


def _marked_temp_dirs() -> list[tuple[Path, str]]:
    """This user's marked run folders under TEMP_ROOT (another user's are never read: Ray opens its folder to all)."""
    found = []
    for mark in TEMP_ROOT.glob(f"{TEMP_PREFIX}*/{TEMP_MARK}"):
        try:
            if mark.parent.stat().st_uid == os.getuid():
                found.append((mark.parent, mark.read_text()))
        except OSError:
            continue  # being removed
    return found


def temp_dirs(run_id: str) -> list[Path]:
    """The folders run_temp_dir made for `run_id` that are still there."""
    return [path for path, owner in _marked_temp_dirs() if owner == run_id]


def remove_temp_dirs(run_id: str) -> list[Path]:
    """Remove the folders of `run_id` still there (call once its processes are gone); returns them."""
    gone = temp_dirs(run_id)
    for path in gone:
        shutil.rmtree(path, ignore_errors=True)
    return gone


def _live_runs() -> set[str]:
    """The run ids that some live process other than this one carries."""
    prefix = f"{RUN_MARKER}=".encode()
    return {
        item[len(prefix) :].decode(errors="replace")
        for _pid, environ, state in _environs()
        if state != "Z"
        for item in environ
        if item.startswith(prefix)
    }


def remove_stale_temp_dirs() -> list[Path]:
    """Remove the folders of runs that have no process left (killed before they could remove them); returns them.
    Called before a run starts, by a process that carries no run id of its own."""
    marked = _marked_temp_dirs()
    live = _live_runs() if marked else set()
    stale = [path for path, owner in marked if owner and owner not in live]
    for path in stale:
        shutil.rmtree(path, ignore_errors=True)
    return stale


SWEEP_SETTLE_S = 10.0  # how long a sweep keeps killing what the run's stopping processes start meanwhile


def sweep(run_id: str, grace_s: float = 3.0, marker: str = RUN_MARKER, settle_s: float = SWEEP_SETTLE_S) -> list[int]:
    """Stop every process of this run still alive: SIGTERM, a short grace, then SIGKILL; then SIGKILL at once
    whatever of the run appeared meanwhile (a zygote finishing a fork, a parent spawning as it stops), look after
    look, until a look finds none or `settle_s` passed. Returns every process it stopped, in the order found."""
    pids = marked_pids(run_id, marker)
    stop_together(pids, grace_s)
    deadline = time.monotonic() + settle_s
    while (late := marked_pids(run_id, marker)) and time.monotonic() < deadline:
        pids += [pid for pid in late if pid not in pids]
        _signal_all(late, signal.SIGKILL)
        _reap(late)
        time.sleep(0.05)
    return pids


def stop_together(pids: list[int], grace_s: float) -> None:
    """SIGTERM to all of them at once, one shared grace, then SIGKILL to what is left (children reaped): they stop
    in the time of the slowest, not in the sum of their times."""
    _signal_all(pids, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.05)
    _signal_all([pid for pid in pids if alive(pid)], signal.SIGKILL)
    _reap(pids)


def _signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def _reap(pids: list[int]) -> None:
    """Collect those that are our own children and have already ended (a zombie of ours holds its PID until then)."""
    for pid in pids:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


class Terminated(KeyboardInterrupt):
    """SIGTERM reached the harness (a CI cancel, `kill`): stop the run as a Ctrl-C would, and tell the child,
    which did not get the signal itself."""


def terminate_as_interrupt() -> None:
    """From now on SIGTERM to this process stops the run like Ctrl-C (everything started is stopped)."""

    def handler(signum, frame):
        raise Terminated(f"signal {signum}")

    signal.signal(signal.SIGTERM, handler)
