"""Real-services tests. They run *inside* a pin's environment (`nox -s tests` arranges that) and start
real Gym servers on loopback, with their own Ray cluster per run."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gymgate.processes import RUN_MARKER, marked_pids, run_environment, sweep
from gymgate.runfolder import RunFolder


def pytest_addoption(parser):
    parser.addoption("--gym-pin", required=True, help="the pin whose environment these tests run in")


@pytest.fixture(scope="session")
def gym_pin(request) -> str:
    pin = request.config.getoption("--gym-pin")
    installed = importlib.metadata.version("nemo-gym")
    if installed != pin:
        pytest.exit(f"tests/services runs inside the {pin} environment, but nemo-gym {installed} is installed", 2)
    return pin


class UpRun:
    """One `python -m gymgate.session.up` child with its own run id."""

    def __init__(self, run_dir: Path, envs: list[str] | None, extra_env: dict[str, str] | None = None):
        self.run_id = "t" + os.urandom(4).hex()
        self.run_dir = run_dir
        args = [
            sys.executable,
            "-m",
            "gymgate.session.up",
            "--run-dir",
            str(run_dir),
        ]
        for env in envs or []:
            args += ["--env", env]
        environ = {**run_environment(os.environ), RUN_MARKER: self.run_id, **(extra_env or {})}
        self.proc = subprocess.Popen(args, env=environ, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: list[str] = []

    def wait(self, timeout: float = 900) -> int:
        out, _ = self.proc.communicate(timeout=timeout)
        self.lines += out.splitlines()
        return self.proc.returncode

    def record(self) -> dict:
        return RunFolder(self.run_dir).up_record()

    def cleanup(self) -> list[int]:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        return sweep(self.run_id, grace_s=1)

    def leftovers(self) -> list[int]:
        return marked_pids(self.run_id)


@pytest.fixture
def up_run(tmp_path):
    runs: list[UpRun] = []

    def start(envs=None, extra_env=None, name="run") -> UpRun:
        run = UpRun(tmp_path / name, envs, extra_env)
        runs.append(run)
        return run

    yield start
    leaked = {r.run_id: r.cleanup() for r in runs}
    assert not any(leaked.values()), f"processes survived their run and had to be swept: {leaked}"
