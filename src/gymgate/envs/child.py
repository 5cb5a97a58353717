"""Running gymgate code inside a pin's environment as a child process, and cleaning up after it.

The child gets a fresh run id in its environment (the marker every process it starts inherits); when
it ends, for whatever reason, the harness sweeps any process still carrying that marker.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gymgate.envs.sync import SyncedEnv
from gymgate.processes import (
    RUN_MARKER,
    Terminated,
    remove_stale_temp_dirs,
    remove_temp_dirs,
    run_environment,
    sweep,
)


def interrupt_then_kill(proc: subprocess.Popen) -> None:
    """SIGINT (the child stops its services), then SIGKILL if it has not ended within STOP_GRACE_S."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=STOP_GRACE_S)


def child_environment(env: SyncedEnv, run_id: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    child = run_environment(os.environ)
    child.update(extra or {})
    child[RUN_MARKER] = run_id
    child["VIRTUAL_ENV"] = str(env.path)
    child["PATH"] = os.pathsep.join([str(env.bin), child.get("PATH", "")])
    child.pop("PYTHONHOME", None)
    # Environments carry no bytecode from their build (envs/sync.py FORMAT 3): what a run imports is compiled once,
    # by whichever process imports it first, and kept (atomically written; Python checks it against its source).
    child.pop("PYTHONDONTWRITEBYTECODE", None)
    return child


TIMED_OUT = 124  # the child's exit code when it outlived its deadline (as timeout(1) reports it)
STOP_GRACE_S = 60.0  # after the deadline or an interrupt: how long the child may take to stop its services


@dataclass
class ChildExit:
    code: int
    leftovers: list[int] = field(default_factory=list)  # run processes alive after the child ended, now killed
    timed_out: bool = False


def run_in_env(
    env: SyncedEnv,
    args: list[str],
    run_id: str,
    cwd: Path | None = None,
    log: Path | None = None,
    timeout_s: float | None = None,
    extra: Mapping[str, str] | None = None,
) -> ChildExit:
    """Run `<env python> args...` (`extra`: more environment variables; output to `log` if given); survive Ctrl-C
    while the child cleans up; sweep whatever remains. After an interrupt it re-raises KeyboardInterrupt once
    everything is stopped. Past `timeout_s` the child is interrupted (then killed) and the exit says `timed_out`."""
    remove_stale_temp_dirs()  # what runs killed earlier (here, or on a cluster's node) left in /tmp
    out = log.open("ab") if log else None
    proc = subprocess.Popen(
        [str(env.python), *args],
        env=child_environment(env, run_id, extra),
        cwd=cwd,
        stdout=out,
        stderr=subprocess.STDOUT if out else None,
    )
    interrupts = 0
    result = ChildExit(-1)
    try:
        while True:
            try:
                try:
                    code = proc.wait(timeout=timeout_s if not interrupts else STOP_GRACE_S)
                except subprocess.TimeoutExpired:
                    if interrupts:  # the child did not stop within its grace: kill it; the sweep below does the rest
                        print(f"gymgate: the run did not stop within {STOP_GRACE_S:g} s; killing it", file=sys.stderr)
                        proc.kill()
                        proc.wait()
                        raise KeyboardInterrupt from None
                    print(f"gymgate: the run did not finish within {timeout_s:g} s; stopping it", file=sys.stderr)
                    result.code, result.timed_out = TIMED_OUT, True
                    interrupt_then_kill(proc)
                    return result
                if interrupts:
                    raise KeyboardInterrupt  # the run was cut short: never report it as judged
                result.code = code
                return result
            except KeyboardInterrupt as exc:
                if proc.poll() is not None:
                    raise
                interrupts += 1
                if interrupts == 1:
                    print("gymgate: interrupted; stopping services (Ctrl-C again to force)", file=sys.stderr)
                    if isinstance(exc, Terminated):
                        proc.send_signal(signal.SIGINT)  # a terminal's Ctrl-C reaches the child itself; SIGTERM not
                elif interrupts == 2:
                    proc.send_signal(signal.SIGTERM)
                else:
                    proc.kill()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if out:
            out.close()
        result.leftovers = leftovers = sweep(run_id)
        if leftovers:
            print(
                f"gymgate: stopped {len(leftovers)} leftover process(es) of run {run_id}: {leftovers}", file=sys.stderr
            )
        remove_temp_dirs(run_id)  # what a killed run could not remove itself (Ray's session, the launcher's sockets)
