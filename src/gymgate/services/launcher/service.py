"""The run's zygotes: started beside the run's Ray cluster by the process that owns the run, awaited with a deadline,
stopped with everything they forked that is still theirs.

Each zygote (preload.toml's `zygotes`) lives in a process group of its own in the run's session; each process it
forks moves into the process group of the client that asked for it (a Gym actor's group for its servers), so stopping
that group still stops exactly what it stopped before. Every process carries the run's marker (the zygotes'
environment), so the final sweep finds them too.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gymgate.errors import InfraError
from gymgate.processes import kill_group
from gymgate.services import launcher
from gymgate.services.launcher import client

READY_TIMEOUT_S = 120.0  # a zygote imports the preloaded modules before it listens
STOP_TIMEOUT_S = 5.0


class Zygotes:
    """The run's zygotes while they run: `wait_ready()` once the run's other start-up work is done."""

    def __init__(self, processes: dict[str, subprocess.Popen], paths: dict[str, str], log_path: Path):
        self.processes, self.paths, self.log_path = processes, paths, log_path

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> None:
        """Until each listens; one that exits or takes longer than `timeout_s` fails the run's start."""
        deadline = time.monotonic() + timeout_s
        for name, path in self.paths.items():
            process = self.processes[name]
            while not os.path.exists(path):
                if process.poll() is not None:
                    raise InfraError(
                        f"the launcher's zygote {name} exited with {process.returncode} before it listened "
                        f"({self.log_path})"
                    )
                if time.monotonic() > deadline:
                    raise InfraError(f"the launcher's zygote {name} did not listen within {timeout_s:g} s")
                time.sleep(0.05)

    def stop(self) -> None:
        """SIGTERM to each zygote's group (itself, and a process that never reached its client's group), then
        SIGKILL."""
        for process in self.processes.values():
            kill_group(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for process in self.processes.values():
            try:
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                kill_group(process.pid, signal.SIGKILL)
                process.wait(timeout=STOP_TIMEOUT_S)


@contextmanager
def serving(log_path: Path, modules: tuple[str, ...] = ()) -> Iterator[Zygotes | None]:
    """With the forking launcher on: the run's zygotes on fresh sockets, exported at once to every process the run
    starts after this (start the run's Ray cluster inside: its workers inherit them). Preloading runs while the
    caller goes on; the caller waits for it (`wait_ready`) before it starts a Gym. None when the launcher is off.
    `modules` replaces each zygote's own list (tests preload something light)."""
    if launcher.checked_mode() != launcher.FORK:
        yield None
        return
    folder = tempfile.mkdtemp(prefix="ggz", dir="/tmp")  # AF_UNIX paths stay short
    log_path.parent.mkdir(parents=True, exist_ok=True)
    processes: dict[str, subprocess.Popen] = {}
    paths: dict[str, str] = {}
    try:
        with open(log_path, "ab") as log:
            for index, (name, spec) in enumerate(launcher.zygotes().items()):
                paths[name] = os.path.join(folder, str(index))
                processes[name] = subprocess.Popen(
                    [sys.executable, "-m", "gymgate.services.launcher.zygote", paths[name], name, *modules],
                    env={**spec.defaults, **os.environ},
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                    process_group=0,  # its own group, in the run's session: what it forks can join its client's
                )
        zygotes = Zygotes(processes, paths, log_path)
        os.environ[client.SOCKET_VARIABLE] = os.pathsep.join(paths.values())
        os.environ[client.PYTHON_VARIABLE] = sys.executable
        yield zygotes
    finally:
        os.environ.pop(client.SOCKET_VARIABLE, None)
        os.environ.pop(client.PYTHON_VARIABLE, None)
        Zygotes(processes, paths, log_path).stop()
        shutil.rmtree(folder, ignore_errors=True)
