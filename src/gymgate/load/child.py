"""A ref's load worker as the harness holds it: a child process in the ref's pin environment, spoken to a line at a
time (load/protocol.py), every answer awaited with a deadline, and stopped (then swept by its run marker) whatever
happens."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from gymgate.envs.child import STOP_GRACE_S, child_environment, interrupt_then_kill
from gymgate.load import protocol
from gymgate.processes import remove_temp_dirs, sweep

GONE = object()  # the reader's mark: the worker's stdout closed


class WorkerGone(RuntimeError):
    """The worker ended, or did not answer within its deadline: nothing more is measured of this ref."""


class LoadChild:
    def __init__(self, env, args: list[str], run_id: str, log: Path, cwd: Path):
        self.run_id, self.log = run_id, log
        self._err = log.open("ab")
        self.proc = subprocess.Popen(
            [str(env.python), "-m", "gymgate.load.worker", *args],
            env=child_environment(env, run_id),
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._err,
            text=True,
            bufsize=1,
        )
        self._answers: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, name=f"load-{run_id}", daemon=True).start()

    def _read(self) -> None:
        """Answers into the queue; anything else the worker prints on stdout (a library's) into its log."""
        assert self.proc.stdout is not None
        with self.log.open("a") as other:
            for line in self.proc.stdout:
                answer = protocol.read_answer(line)
                if answer is None:
                    other.write(line)
                    other.flush()
                else:
                    self._answers.put(answer)
        self._answers.put(GONE)

    def answer(self, timeout_s: float, what: str) -> dict[str, Any]:
        try:
            got = self._answers.get(timeout=timeout_s)
        except queue.Empty:
            raise WorkerGone(f"no answer to {what} within {timeout_s:g} s (worker log: {self.log})") from None
        if got is GONE:
            self._answers.put(GONE)
            code = self.proc.poll()
            raise WorkerGone(f"the load worker ended (status {code}) before answering {what} (log: {self.log})")
        return got

    def send(self, command: dict[str, Any]) -> None:
        """A command, not awaited (`answer` takes its answer): both refs' workers can run one at once."""
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(json.dumps(command) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise WorkerGone(f"the load worker is gone ({exc}); log: {self.log}") from None

    def ask(self, command: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        self.send(command)
        return self.answer(timeout_s, what_of(command))

    def close(self, timeout_s: float) -> list[int]:
        """Ask the worker to stop its Gyms; past `timeout_s`, interrupt it, then kill it. Returns the run's processes
        still alive afterwards, now killed (a finding: the worker should have stopped them)."""
        try:
            if self.proc.poll() is None and self.proc.stdin is not None:
                self.proc.stdin.write(json.dumps({"op": protocol.STOP}) + "\n")
                self.proc.stdin.close()
            self.proc.wait(timeout=timeout_s)
        except (BrokenPipeError, OSError, ValueError):
            pass
        except subprocess.TimeoutExpired:
            print(
                f"gymgate: load worker {self.run_id} did not stop within {timeout_s:g} s; stopping it", file=sys.stderr
            )
            interrupt_then_kill(self.proc)
        except KeyboardInterrupt:
            interrupt_then_kill(self.proc)
            raise
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(timeout=STOP_GRACE_S)
            self._err.close()
            left = sweep(self.run_id)
            remove_temp_dirs(self.run_id)
        return left


def what_of(command: dict[str, Any]) -> str:
    """A command as an expired wait names it."""
    return f"{command['op']} {command.get('env', '')} {command.get('level', '')}".strip()
