"""Content-addressed environments: one synced venv per (lock, Gym digest, interpreter, checkout).

Two refs with the same lock share a directory; a second run finds the completion mark and installs
nothing; concurrent runs serialise on a file lock and never see a half-built environment (the mark
is written last, and a directory without it is rebuilt from scratch).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from gymgate.envs import neighbour
from gymgate.envs.project import check_artifact, uv_env
from gymgate.envs.python import Interpreter
from gymgate.errors import BuildError, StaleLockError
from gymgate.locations import cache_dir, envs_dir, repo_root
from gymgate.locks import held
from gymgate.refs.source import GymSource

# 2: bytecode compiled at install time (machines here set PYTHONDONTWRITEBYTECODE=1, so without it every Gym
# server process recompiled ~4 CPU-s of imports from source on every start).
# 3: no bytecode compiled at install time: gymgate's children write it for what they import (envs/child.py), once;
# compiling every installed file cost 55.6 CPU-s per 0.7.0 environment, what runs import ~14 (docs/benchmarks.md).
FORMAT = "3"
MARK = ".gymgate-env.json"
LOCK_TIMEOUT_S = 1800
SYNC_TIMEOUT_S = 1800  # a cold sync downloads ~1.6 GB from the index
CHECK_TIMEOUT_S = 120
BUILD_SITE = Path(__file__).parent / "buildsite"  # sitecustomize for the build backend (see its docstring)


@dataclass(frozen=True)
class SyncedEnv:
    key: str
    path: Path
    python: Path
    interpreter: Interpreter
    project: Path
    built: bool
    seconds: float
    built_from: str | None = None  # the neighbour it was copied from (envs/neighbour.py), if any
    installed: tuple[str, ...] = ()  # what was installed on top of that neighbour

    @property
    def bin(self) -> Path:
        return self.path / "bin"


def env_key(project: Path, source: GymSource, interp: Interpreter) -> str:
    digest = hashlib.sha256()
    for part in (
        FORMAT,
        (project / "pyproject.toml").read_bytes().decode(),
        (project / "uv.lock").read_bytes().decode(),
        source.digest,
        interp.implementation,
        interp.version,
        interp.build,  # the exact build: a rebuilt interpreter of the same version is another environment
        str(interp.path),
        # gymgate is installed editable: the env is tied to the checkout it points at.
        str(repo_root()),
    ):
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()[:20]


def check_lock(project: Path, source: GymSource, interp: Interpreter) -> None:
    """The lock must still match its project (nemo-gym, the extras, gymgate's own dependencies): checked on
    every run, also when the environment is reused, so a stale lock never hides behind a cached env (~70 ms)."""
    result = _uv(["uv", "lock", "--check", "--project", str(project), "--python", str(interp.path)], CHECK_TIMEOUT_S)
    if result.returncode != 0:
        fix = f"nox -s lock -- {source.name}" if project.is_relative_to(envs_dir()) else "delete it and run again"
        raise StaleLockError(
            f"{project / 'uv.lock'} is stale for its pyproject.toml; fix with `{fix}`.\n{result.stderr.strip()[-1500:]}"
        )


def ensure_env(project: Path, source: GymSource, interp: Interpreter) -> SyncedEnv:
    check_artifact(project, source)
    check_lock(project, source, interp)
    key = env_key(project, source, interp)
    root = cache_dir() / "envs"
    root.mkdir(parents=True, exist_ok=True)
    path = root / key
    start = time.monotonic()
    near, installed = None, ()
    with held(root / f"{key}.lock", LOCK_TIMEOUT_S, f"building environment {key}"):
        built = not (path / MARK).is_file()
        if built:
            shutil.rmtree(path, ignore_errors=True)
            how = _build(project, path, interp, source)
            near, installed = how.get("built_from"), tuple(how.get("installed", ()))
            shutil.copyfile(project / "uv.lock", path / neighbour.LOCK_COPY)
            (path / (MARK + ".tmp")).write_text(
                json.dumps(
                    {
                        "key": key,
                        "gym": source.to_json(),
                        "python": interp.version,
                        "python_build": interp.build,
                        "project": str(project),
                        "built_at": time.time(),
                        **_neighbour_marks(interp),
                        **how,
                        neighbour.LOCKED: neighbour.locked((project / "uv.lock").read_text()),
                    },
                    indent=2,
                )
            )
            (path / (MARK + ".tmp")).rename(path / MARK)
    return SyncedEnv(
        key=key,
        path=path,
        python=path / "bin" / "python",
        interpreter=interp,
        project=project,
        built=built,
        seconds=time.monotonic() - start,
        built_from=near,
        installed=installed,
    )


def _neighbour_marks(interp: Interpreter) -> dict[str, str]:
    """What an environment must share with another to be built from it (the rest is the lock's business)."""
    return {"format": FORMAT, "interpreter": str(interp.path), "checkout": str(repo_root())}


def _build(project: Path, path: Path, interp: Interpreter, source: GymSource) -> dict[str, object]:
    """Sync `path` to the project's lock: from the nearest complete environment when one differs in a few packages
    (envs/neighbour.py), else from scratch. Returns what the completion mark says about how it was built."""
    near = neighbour.find(path.parent, project / "uv.lock", _neighbour_marks(interp), MARK)
    if near is not None:
        try:
            neighbour.copy_env(near.path, path, MARK)
            _sync(project, path, interp, source)
            neighbour.compile_changed(path / "bin" / "python", near.changed)
            missing = neighbour.missing_files(path)
            if missing:
                raise OSError(f"the copy lacks files its distributions installed: {', '.join(missing)}")
            return {"built_from": near.key, "installed": near.changed}
        except (OSError, subprocess.SubprocessError, BuildError) as exc:
            print(f"environment from {near.key} failed ({type(exc).__name__}: {exc}); syncing from scratch", flush=True)
            shutil.rmtree(path, ignore_errors=True)
    _sync(project, path, interp, source)
    return {"built_from": None}


def _sync(project: Path, path: Path, interp: Interpreter, source: GymSource) -> None:
    args = [
        "uv",
        "sync",
        "--locked",
        "--project",
        str(project),
        "--python",
        str(interp.path),
        "--no-progress",
    ]
    pythonpath = os.pathsep.join(p for p in (str(BUILD_SITE), os.environ.get("PYTHONPATH", "")) if p)
    try:
        result = _uv(args, SYNC_TIMEOUT_S, UV_PROJECT_ENVIRONMENT=str(path), PYTHONPATH=pythonpath)
    except BuildError:
        shutil.rmtree(path, ignore_errors=True)
        raise
    if result.returncode == 0:
        return
    shutil.rmtree(path, ignore_errors=True)
    err = result.stderr.strip()
    if "needs to be updated" in err or "--locked" in err:
        fix = f"nox -s lock -- {source.name}" if project.is_relative_to(envs_dir()) else "delete it and run again"
        raise StaleLockError(f"{project / 'uv.lock'} is stale for its pyproject.toml; fix with `{fix}`.\n{err[-1500:]}")
    raise BuildError(f"uv sync failed for {project}:\n{err[-2500:]}")


def _uv(args: list[str], timeout_s: float, **env: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(args, env=uv_env(**env), capture_output=True, text=True, check=False, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise BuildError(f"`{' '.join(args[:3])}` did not finish in {timeout_s:.0f} s: {' '.join(args)}") from None
