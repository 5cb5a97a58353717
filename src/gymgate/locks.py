"""File locks that say who holds them: a run waiting on an environment build or a shared setup another run holds
gets, past its deadline, an error naming that run (its run id, PID, command and since when), not a bare timeout."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from gymgate.errors import InfraError
from gymgate.processes import RUN_MARKER


def _holder_file(lock: Path) -> Path:
    return lock.with_name(lock.name + ".holder")


def describe_holder(lock: Path) -> str:
    try:
        holder = json.loads(_holder_file(lock).read_text())
    except (OSError, ValueError):
        return "an unknown process (it left no holder record)"
    since = time.strftime("%H:%M:%S", time.localtime(holder.get("since", 0)))
    run = f"run {holder['run']}, " if holder.get("run") else ""
    return f"{run}pid {holder.get('pid')} since {since} ({holder.get('command', '?')})"


@contextmanager
def held(lock: Path, timeout_s: float, what: str) -> Iterator[None]:
    """Hold `lock` (waiting at most `timeout_s`); record who holds it while held."""
    try:
        with FileLock(str(lock), timeout=timeout_s):
            _holder_file(lock).write_text(
                json.dumps(
                    {
                        "pid": os.getpid(),
                        "run": os.environ.get(RUN_MARKER, ""),
                        "since": time.time(),
                        "command": " ".join(sys.argv)[:200],
                    }
                )
            )
            yield
    except Timeout:
        raise InfraError(
            f"{what}: waited {timeout_s:g} s for {lock}, held by {describe_holder(lock)}; "
            "wait for that run to finish, or stop it"
        ) from None
