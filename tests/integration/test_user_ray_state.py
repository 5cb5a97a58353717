"""A run is hermetic against the user's own Ray state: a real run here, by a user whose HOME has a `.ray` that Ray
can neither read a token from nor write one into (a plain file where Ray expects its folder), and whose shell carries
Ray settings of their own — token authentication on with a token file that does not exist (Ray aborts on that), a
cluster's address, a temp dir, and the job configuration Ray gives a process started inside a Ray job (gymgate run
from an RL job) — runs as on a clean machine, and leaves all of it as it was."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from gymgate.runfolder import RunFolder
from tests.helpers import moved_home


def _users_environment(tmp: Path) -> tuple[dict[str, str], Path, Path]:
    """A HOME of the test's own (tests/helpers.moved_home) with the user's Ray settings above; returns the
    environment, that HOME and the Ray temp dir."""
    home, ray_tmp = tmp / "home", tmp / "ray-tmp"
    ray_tmp.mkdir()
    env = moved_home(
        home,
        RAY_AUTH_MODE="token",
        RAY_AUTH_TOKEN_PATH=str(tmp / "no-such-token"),
        RAY_ADDRESS="127.0.0.1:9",
        RAY_TMPDIR=str(ray_tmp),
        RAY_JOB_CONFIG_JSON_ENV_VAR=json.dumps({"runtime_env": {"working_dir": str(tmp / "no-such-dir")}}),
    )
    (home / ".ray").write_text("a file where Ray expects its folder\n")
    return env, home, ray_tmp


def test_a_run_neither_reads_nor_writes_the_users_ray_state(tmp_path):
    env, home, ray_tmp = _users_environment(tmp_path)
    command = [sys.executable, "-m", "gymgate", "accept", "--gym-ref", "0.7.0", "--no-baseline", "--env", "mcqa"]
    command += ["--attempts", "1", "-n", "0", "--no-cache", "--runs-dir", str(tmp_path / "runs")]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    said = done.stdout + done.stderr
    assert done.returncode == 0, said[-4000:]
    (run,) = (tmp_path / "runs").iterdir()
    assert RunFolder(run).records(), "the run judged no path"  # exit 0 alone: every path it ran passed
    assert (home / ".ray").read_text() == "a file where Ray expects its folder\n"
    assert sorted(p.name for p in home.iterdir()) == [".ray"]
    assert list(ray_tmp.iterdir()) == []
