"""The harness's bound on a whole session: a child that outlives its deadline is interrupted, then killed, and the
exit says so; nothing it started survives."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from gymgate.envs import child as runner
from gymgate.envs.child import TIMED_OUT, run_in_env
from gymgate.envs.sync import SyncedEnv
from gymgate.processes import RUN_ENVIRONMENT, marked_pids


def _env() -> SyncedEnv:
    python = Path(sys.executable)
    return SyncedEnv("k", python.parent.parent, python, None, python.parent, False, 0.0)


def test_a_child_past_its_deadline_is_stopped_and_reported(tmp_path, monkeypatch):
    began = time.monotonic()
    # Ignores SIGINT, so the harness has to escalate to SIGKILL after the grace period.
    script = "import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); time.sleep(600)"
    monkeypatch.setattr(runner, "STOP_GRACE_S", 1.0)
    result = run_in_env(_env(), ["-c", script], "deadlinetest", log=tmp_path / "log", timeout_s=1.0)
    assert result.timed_out and result.code == TIMED_OUT
    assert time.monotonic() - began < 30
    assert marked_pids("deadlinetest") == []


def test_a_child_within_its_deadline_reports_its_own_code(tmp_path):
    result = run_in_env(_env(), ["-c", "raise SystemExit(3)"], "deadlinetest2", timeout_s=60.0)
    assert (result.code, result.timed_out, result.leftovers) == (3, False, [])


def test_a_child_writes_the_bytecode_its_environment_was_built_without(monkeypatch):
    """Environments are built without bytecode (envs/sync.py FORMAT 3): gymgate's children must be free to write it,
    whatever the machine says (these machines set PYTHONDONTWRITEBYTECODE=1)."""
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    env = runner.child_environment(_env(), "run1")
    assert "PYTHONDONTWRITEBYTECODE" not in env and env["VIRTUAL_ENV"]


def test_a_run_sees_none_of_the_users_ray_variables(monkeypatch):
    """A user's Ray settings (their cluster's address and token, a temp dir) never reach a run, and the run's own
    cluster neither reads nor writes ~/.ray/auth_token (RAY_AUTH_MODE set)."""
    for name, value in {"RAY_ADDRESS": "10.0.0.1:6379", "RAY_AUTH_TOKEN": "t", "RAY_TMPDIR": "/x"}.items():
        monkeypatch.setenv(name, value)
    env = runner.child_environment(_env(), "run1")
    assert {k for k in env if k.startswith("RAY_")} == {k for k in RUN_ENVIRONMENT if k.startswith("RAY_")}
    assert env["RAY_AUTH_MODE"] == "disabled"
