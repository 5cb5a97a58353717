"""The uv project per Gym ref: nemo-gym at the ref, the extras its own seven environments declare,
gymgate itself and the test tooling. Pins keep theirs committed under envs/<pin>/; other refs get one
generated in the cache."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import tomllib
from pathlib import Path

import tomli_w

from gymgate.cases.environments import all_environments
from gymgate.envs.python import Interpreter
from gymgate.errors import BuildError, InfraError, StaleLockError
from gymgate.locations import cache_dir, envs_dir, repo_root
from gymgate.refs.distribution import Distribution
from gymgate.refs.pins import defaults
from gymgate.refs.source import KIND_GIT, KIND_TREE, KIND_WHEEL, GymSource

# What every pin environment carries besides Gym: the harness and what its tests run with.
TOOLING = [
    "starlette>=0.40",
    "uvicorn>=0.30",
    "pytest>=8",
    "pytest-xdist>=3.6,<3.9",  # gymgate.session.schedule overrides private LoadScopeScheduling methods (tests/unit/test_schedule.py)
    "filelock>=3.13",
    "tokenizers>=0.20",
    "transformers>=4.46",
]
LOCK_TIMEOUT_S = 900  # resolving ~190 packages against the index
REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def uv_env(**extra: str) -> dict[str, str]:
    """The environment every uv call runs with: the project's own [tool.uv] settings (exclude-newer,
    sources) but no user-level uv.toml, and no interpreter downloads."""
    private = cache_dir() / "uv-config-home"
    private.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, XDG_CONFIG_HOME=str(private), UV_PYTHON_DOWNLOADS="never")
    env.pop("UV_NO_CONFIG", None)
    env.pop("VIRTUAL_ENV", None)
    env.update(extra)
    return env


PROJECT_FORMAT = "2"  # bump when render_project changes shape, so cached projects of unpinned refs regenerate


def project_dir(source: GymSource) -> Path:
    """A pin's committed project, or a generated one per content digest -- and per path for a local checkout or
    wheel, which the lock names by where it lies: the same bytes elsewhere are another project."""
    if source.pinned:
        return envs_dir() / source.name
    where = ""
    if source.kind in (KIND_TREE, KIND_WHEEL) and source.path is not None:
        where = "-" + hashlib.sha256(str(source.path.resolve()).encode()).hexdigest()[:8]
    return cache_dir() / "projects" / f"{source.name}{where}-p{PROJECT_FORMAT}"


def _is_gym(requirement: str) -> bool:
    match = REQUIREMENT_NAME.match(requirement)
    return bool(match) and match.group(1).replace("_", "-").lower() == "nemo-gym"


def declared_extras(dist: Distribution) -> dict[str, list[str]]:
    """Requirements of the seven environments' server dirs, as the Gym at this ref declares them."""
    extras: dict[str, list[str]] = {}
    dirs = sorted({d for env in all_environments() for d in env.all_server_dirs})
    for server_dir in dirs:
        reqs: list[str] = []
        text = dist.read(f"{server_dir}/requirements.txt")
        if text is not None:
            for line in text.splitlines():
                line = line.split("#", 1)[0].strip()
                if line and not line.startswith("-") and not _is_gym(line):
                    reqs.append(line)
        pyproject = dist.read(f"{server_dir}/pyproject.toml")
        if pyproject is not None:
            deps = tomllib.loads(pyproject).get("project", {}).get("dependencies", [])
            reqs.extend(d for d in deps if not _is_gym(d))
        if reqs:
            extras[server_dir] = reqs
    return extras


def render_project(source: GymSource, extras: dict[str, list[str]]) -> dict:
    where = project_dir(source)
    gymgate_path = os.path.relpath(repo_root(), where) if source.pinned else str(repo_root())
    sources: dict[str, dict] = {"gymgate": {"path": gymgate_path, "editable": True}}
    if source.kind == KIND_WHEEL:
        sources["nemo-gym"] = {"path": str(source.path)}
        gym_req = "nemo-gym"
    elif source.kind in (KIND_TREE, KIND_GIT):
        # A wheel built from a Gym tree leaves out its configs and data files; Gym is meant to run from
        # the tree itself (as NeMo RL's workspace member does), so the tree is installed editable.
        sources["nemo-gym"] = {"path": str(source.path), "editable": True}
        gym_req = "nemo-gym"
    else:
        gym_req = f"nemo-gym=={source.version}"
    extra_reqs = sorted({r for reqs in extras.values() for r in reqs})
    return {
        "project": {
            "name": "gymgate-env-" + re.sub(r"[^a-z0-9]+", "-", source.name.lower()),
            "version": "0",
            "requires-python": source.requires_python or ">=3.12",
            "dependencies": [gym_req, *extra_reqs, "gymgate", *TOOLING],
        },
        "tool": {
            "uv": {"package": False, "exclude-newer": defaults().get("exclude-newer", ""), "sources": sources},
            "gymgate": {
                "gym-ref": source.name,
                "gym-digest": source.digest,
                "extras-declared-by": {k: sorted(v) for k, v in extras.items()},
            },
        },
    }


def write_project(source: GymSource) -> Path:
    where = project_dir(source)
    where.mkdir(parents=True, exist_ok=True)
    data = render_project(source, declared_extras(Distribution(source)))
    if not data["tool"]["uv"]["exclude-newer"]:
        del data["tool"]["uv"]["exclude-newer"]
    header = f"# Generated by `nox -s lock` for {source.describe()}. Do not edit by hand.\n"
    (where / "pyproject.toml").write_text(header + tomli_w.dumps(data))
    return where


def lock(where: Path, interp: Interpreter, upgrade: bool = False) -> None:
    args = ["uv", "lock", "--project", str(where), "--python", str(interp.path)]
    if upgrade:
        args.append("--upgrade")
    try:
        result = subprocess.run(args, env=uv_env(), capture_output=True, text=True, check=False, timeout=LOCK_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise BuildError(f"cannot lock {where}: `uv lock` did not finish in {LOCK_TIMEOUT_S} s") from None
    if result.returncode != 0:
        raise BuildError(f"cannot lock {where}: {result.stderr.strip()[-2000:]}")


def check_artifact(where: Path, source: GymSource) -> None:
    """A pin's lock must install exactly the artifact the pin names: anything else is a hash mismatch."""
    lock_file = where / "uv.lock"
    if not lock_file.is_file():
        raise StaleLockError(f"{lock_file} is missing; run `nox -s lock -- {source.name}`")
    if not source.pinned:
        return
    data = tomllib.loads(lock_file.read_text())
    for package in data.get("package", []):
        if package.get("name") == "nemo-gym":
            if package.get("version") != source.version:
                raise StaleLockError(
                    f"{lock_file} locks nemo-gym {package.get('version')}, the pin says {source.version}; "
                    f"run `nox -s lock -- {source.name}`"
                )
            hashes = {w.get("hash", "").removeprefix("sha256:") for w in package.get("wheels", [])}
            hashes.add(package.get("sdist", {}).get("hash", "").removeprefix("sha256:"))
            if source.digest not in hashes:
                raise InfraError(
                    f"hash mismatch: {lock_file} does not carry nemo-gym sha256:{source.digest} from "
                    f"pins/{source.name}.toml (it has {', '.join(sorted(h for h in hashes if h))})"
                )
            return
    raise StaleLockError(f"{lock_file} does not lock nemo-gym; run `nox -s lock -- {source.name}`")
