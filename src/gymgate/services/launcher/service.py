"""The run's zygote: one per run (per pin environment), started beside the run's Ray cluster by the process that owns
the run, awaited with a deadline, stopped with everything it forked that is still its own.

The zygote lives in a process group of its own in the run's session; each server it forks moves into the process
group of the Gym actor that asked for it (the client sends it), so stopping an actor's group still stops exactly that
Gym's servers. Every process carries the run's marker (the zygote's environment), so the final sweep finds them too.
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
from contextlib import contextmanager, suppress
from pathlib import Path

from gymgate.errors import InfraError, UsageError
from gymgate.services import launcher
from gymgate.services.launcher import client

READY_TIMEOUT_S = 120.0  # the zygote imports the preloaded modules before it listens
STOP_TIMEOUT_S = 5.0


class Zygote:
    """The run's zygote while it runs: `wait_ready()` once the run's other start-up work is done."""

    def __init__(self, process: subprocess.Popen, path: str, log_path: Path):
        self.process, self.path, self.log_path = process, path, log_path

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> None:
        """Until it listens; a zygote that exits or takes longer than `timeout_s` fails the run's start."""
        deadline = time.monotonic() + timeout_s
        while not os.path.exists(self.path):
            if self.process.poll() is not None:
                raise InfraError(
                    f"the launcher's zygote exited with {self.process.returncode} before it listened ({self.log_path})"
                )
            if time.monotonic() > deadline:
                raise InfraError(f"the launcher's zygote did not listen within {timeout_s:g} s ({self.log_path})")
            time.sleep(0.05)

    def stop(self) -> None:
        """SIGTERM to its group (itself, and a server that never reached its actor's group), then SIGKILL."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with suppress(ProcessLookupError):
                os.killpg(self.process.pid, sig)
            with suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=STOP_TIMEOUT_S)
                return


@contextmanager
def serving(log_path: Path) -> Iterator[Zygote | None]:
    """With the forking launcher on: a zygote on a fresh socket, exported at once to every process the run starts
    after this (start the run's Ray cluster inside: its workers inherit it). Preloading runs while the caller goes on;
    the caller waits for it (`wait_ready`) before it starts a Gym. None when the launcher is off."""
    if launcher.mode() not in launcher.MODES:
        raise UsageError(f"{launcher.MODE_VARIABLE}={launcher.mode()!r}: expected one of {', '.join(launcher.MODES)}")
    if not launcher.enabled():
        yield None
        return
    folder = tempfile.mkdtemp(prefix="ggz", dir="/tmp")  # AF_UNIX paths stay short
    path = os.path.join(folder, "s")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "gymgate.services.launcher.zygote", path, *launcher.preloaded()],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            process_group=0,  # its own group, in the run's session: servers can join their actor's group
        )
    zygote = Zygote(process, path, log_path)
    os.environ[client.SOCKET_VARIABLE] = path
    os.environ[client.PYTHON_VARIABLE] = sys.executable
    try:
        yield zygote
    finally:
        os.environ.pop(client.SOCKET_VARIABLE, None)
        os.environ.pop(client.PYTHON_VARIABLE, None)
        zygote.stop()
        shutil.rmtree(folder, ignore_errors=True)
