"""The run's zygotes: started beside the run's Ray cluster by the process that owns the run, awaited with a deadline,
stopped with everything they forked that is still theirs.

The zygotes (preload.toml's `zygotes`), forked by one stem process (zygote.py), live in the stem's process group, of
their own in the run's session; each process a zygote forks moves into the process group of the client that asked
for it (a Gym actor's group for its servers), so stopping that group still stops exactly what it stopped before. Every process carries the run's marker (the zygotes'
environment), so the final sweep finds them too.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from gymgate.errors import InfraError
from gymgate.processes import alive, kill_group, run_temp_dir
from gymgate.services import launcher
from gymgate.services.launcher import client

READY_TIMEOUT_S = 120.0  # a zygote imports the preloaded modules before it listens
STOP_TIMEOUT_S = 5.0
STEM_VARIABLE = "GYMGATE_LAUNCHER_STEM"  # the stem's PID, exported beside the sockets: a process that inherits them
# can tell zygotes still importing from zygotes that will never listen


class Zygotes:
    """The run's zygotes while they run (one stem process and the zygotes it forked, one process group):
    `wait_ready()` once the run's other start-up work is done."""

    def __init__(self, process: subprocess.Popen | None, paths: dict[str, str], log_path: Path):
        self.process, self.paths, self.log_path = process, paths, log_path

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> None:
        """Until each listens; one that exits or takes longer than `timeout_s` fails the run's start."""

        def ended() -> str | None:
            return None if self.process.poll() is None else f"exited with {self.process.returncode}"

        _wait_listening(self.paths, ended, self.log_path, timeout_s)

    def stop(self) -> None:
        """SIGTERM to the zygotes' group (the stem, the zygotes, a process that never reached its client's group),
        then SIGKILL."""
        if self.process is None:
            return
        kill_group(self.process.pid, signal.SIGTERM)
        with suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=STOP_TIMEOUT_S)
        kill_group(self.process.pid, signal.SIGKILL)  # a zygote that outlived the stem is still in its group
        self.process.wait(timeout=STOP_TIMEOUT_S)


@contextmanager
def serving(log_path: Path, modules: tuple[str, ...] = ()) -> Iterator[Zygotes | None]:
    """With the forking launcher on: the run's zygotes on fresh sockets, exported at once to every process the run
    starts after this (start the run's Ray cluster inside: its workers inherit them). Preloading runs while the
    caller goes on; whoever starts a Gym waits for it first (`wait_ready`, or `wait_exported` in a process started
    meanwhile). None when the launcher is off.
    `modules` replaces what is preloaded (tests preload something light)."""
    if launcher.checked_mode() != launcher.FORK:
        yield None
        return
    folder = str(run_temp_dir("z"))  # AF_UNIX paths stay short
    log_path.parent.mkdir(parents=True, exist_ok=True)
    names = list(launcher.zygotes())
    paths = {name: os.path.join(folder, name) for name in names}
    process = None
    try:
        with open(log_path, "ab") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "gymgate.services.launcher.zygote", folder, ",".join(names), *modules],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                process_group=0,  # its own group, in the run's session: what it forks can join its client's
            )
        zygotes = Zygotes(process, paths, log_path)
        os.environ[client.SOCKET_VARIABLE] = os.pathsep.join(paths.values())
        os.environ[client.PYTHON_VARIABLE] = sys.executable
        os.environ[STEM_VARIABLE] = str(process.pid)
        yield zygotes
    finally:
        for variable in (client.SOCKET_VARIABLE, client.PYTHON_VARIABLE, STEM_VARIABLE):
            os.environ.pop(variable, None)
        Zygotes(process, paths, log_path).stop()
        shutil.rmtree(folder, ignore_errors=True)


def wait_exported(log_path: Path, timeout_s: float = READY_TIMEOUT_S) -> None:
    """In a process started after `serving` exported the zygotes (a pytest worker, which starts while they still
    import): until each listens, before the first Gym starts — a Gym started earlier would run every server in a
    fresh interpreter. The stem gone first, or `timeout_s` passed, fails this process's start. Nothing exported (the
    launcher off): returns at once."""
    paths = [p for p in os.environ.get(client.SOCKET_VARIABLE, "").split(os.pathsep) if p]
    stem = os.environ.get(STEM_VARIABLE)
    if not paths or not stem:
        return
    names = {Path(path).name: path for path in paths}
    _wait_listening(names, lambda: None if alive(int(stem)) else "exited", log_path, timeout_s)


def _wait_listening(paths: dict[str, str], ended: Callable[[], str | None], log_path: Path, timeout_s: float) -> None:
    """Until every socket of `paths` exists; `ended()` (how the stem ended, None while it runs) ends the wait."""
    deadline = time.monotonic() + timeout_s
    for name, path in paths.items():
        while not os.path.exists(path):
            status = ended()
            if status is not None:
                raise InfraError(f"the launcher's zygotes {status} before {name} listened ({log_path})")
            if time.monotonic() > deadline:
                raise InfraError(f"the launcher's zygote {name} did not listen within {timeout_s:g} s")
            time.sleep(0.02)
