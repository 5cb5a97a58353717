"""A new user's first run: a fresh clone, an empty gymgate cache, no CPython that meets nemo-gym 0.7.0's floor
visible anywhere gymgate looks (PATH, pyenv, uv's managed ones, gymgate's cache), uv's downloads off — and the
README's own `nox -s accept` provides the interpreter itself and runs, instead of stopping with a remedy.

The build it provides may be reused from this machine's own finished build (GYMGATE_PYTHON_BUILDS, the shared store
of builds: copied, smoke-tested, marked): that is the step a machine without one compiles, on the same path."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from packaging.version import Version

from gymgate.envs import cpython
from gymgate.locations import repo_root
from gymgate.runfolder import RunFolder

FLOOR = Version("3.13.14")  # nemo-gym 0.5.0 and later
PIN = "0.7.0"


def _hidden_path(tmp: Path) -> str:
    """PATH without pyenv's shims and without any directory holding a CPython that meets the floor."""
    kept = []
    for directory in os.environ["PATH"].split(os.pathsep):
        if not directory or "shims" in Path(directory).parts:
            continue
        found = [p.name.removeprefix("python") for p in Path(directory).glob("python3.1*")]
        if any(re.fullmatch(r"3\.\d+", v) and Version(v) >= Version("3.13") for v in found):
            continue
        kept.append(directory)
    return os.pathsep.join([str(_nox().parent), *kept])


def _nox() -> Path:
    """The nox the README's install put on the machine (behind pyenv's shim, when pyenv installed it)."""
    found = Path(shutil.which("nox") or "nox")
    if "shims" in found.parts:
        found = Path(subprocess.check_output(["pyenv", "which", "nox"], text=True, timeout=60).strip())
    return found.resolve()


def _pyenv_below_floor(tmp: Path) -> Path:
    """A pyenv root holding only the machine's interpreters older than the floor."""
    real = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    root = tmp / "pyenv"
    (root / "versions").mkdir(parents=True)
    for version in sorted((real / "versions").glob("*")):
        try:
            if Version(version.name) < FLOOR:
                (root / "versions" / version.name).symlink_to(version)
        except ValueError:
            continue
    return root


def test_first_accept_on_a_machine_without_the_interpreter_provides_it(tmp_path):
    clone = tmp_path / "gymgate"
    subprocess.run(["git", "clone", "-q", str(repo_root()), str(clone)], check=True, timeout=300)
    cache = tmp_path / "cache"
    env = dict(
        os.environ,
        PATH=_hidden_path(tmp_path),
        PYENV_ROOT=str(_pyenv_below_floor(tmp_path)),
        UV_PYTHON_INSTALL_DIR=str(tmp_path / "uv-pythons"),  # no uv-managed interpreter either
        UV_PYTHON_DOWNLOADS="never",
        GYMGATE_CACHE=str(cache),
        GYMGATE_PYTHON_BUILDS=str(cpython.pythons_dir()),  # this machine's finished build, when it has one
    )
    for var in ("GYMGATE_PYTHON_BUILD", "GYMGATE_BASELINE", "GYMGATE_ENVS", "VIRTUAL_ENV"):
        env.pop(var, None)
    done = subprocess.run(
        [
            str(_nox()),
            "-s",
            "accept",
            "--",
            "--gym-ref",
            PIN,
            "--no-baseline",
            "--env",
            "mcqa",
            "--attempts",
            "1",
            "-n",
            "0",
            "--runs-dir",
            str(tmp_path / "runs"),
        ],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    said = done.stdout + done.stderr
    assert done.returncode == 0, said[-4000:]
    # The command itself said why it paused and what it provides, and then found nothing to do again.
    assert (
        f"nemo-gym {PIN} (pin from index" in said
        and "requires Python >=3.13.14" in said
        and "Providing CPython 3.13.15 in gymgate's cache" in said
    ), said
    provided = cache / "pythons" / "cpython-3.13.15" / "bin" / "python3"
    assert provided.is_file()
    (run,) = (tmp_path / "runs").iterdir()
    assert RunFolder(run).environment()["interpreter"]["path"] == str(provided)
    assert ".nox/" not in said.split("Providing CPython", 1)[1].split("\n", 1)[0]
