"""The uv project per Gym ref: nemo-gym at the ref, the extras its default set's environments declare,
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
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from gymgate.cases.derived import runnable_here
from gymgate.cases.environments import shipped_servers
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


WIDE = "all"  # the variant carrying every runnable server's requirements (`--env-set all`)


def project_dir(source: GymSource, wide: bool = False) -> Path:
    """A pin's committed project, or a generated one per content digest -- and per path for a local checkout or
    wheel, which the lock names by where it lies: the same bytes elsewhere are another project. The wide variant
    (every runnable server's requirements, cases/derived.py) is generated for every ref, pins too: it is locked
    once per ref on the machine that asks for it (exclude-newer keeps the resolution fixed) and every run keeps
    its lock."""
    if source.pinned and not wide:
        return envs_dir() / source.name
    where = ""
    if source.kind in (KIND_TREE, KIND_WHEEL) and source.path is not None:
        where = "-" + hashlib.sha256(str(source.path.resolve()).encode()).hexdigest()[:8]
    variant = f"-{WIDE}" if wide else ""
    return cache_dir() / "projects" / f"{source.name}{where}{variant}-p{PROJECT_FORMAT}"


def _is_gym(requirement: str) -> bool:
    match = REQUIREMENT_NAME.match(requirement)
    return bool(match) and match.group(1).replace("_", "-").lower() == "nemo-gym"


def server_requirements(dist: Distribution, server_dir: str) -> list[str]:
    """What one server dir requires besides Gym (requirements.txt, pyproject.toml), as the Gym at this ref says."""
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
    return reqs


def declared_extras(dist: Distribution) -> dict[str, list[str]]:
    """Requirements of gymgate's own cases' server dirs, as the Gym at this ref declares them (a repository's cases
    add none: what they need beyond these, the wide environment carries)."""
    dirs = sorted(shipped_servers())
    return {d: reqs for d in dirs if (reqs := server_requirements(dist, d))}


def wide_extras(dist: Distribution, derived: list | None = None) -> tuple[dict[str, list[str]], dict[str, str]]:
    """The wide variant's requirements: the cases' own, then each runnable server's without a case that agrees
    with what is admitted so far (alphabetically); and the servers left out, with the requirement they conflict
    over. One environment holds every server (gym-runtime: Gym never builds a venv of its own here), so two pins of
    one package cannot both be kept. `derived`: the runnable servers without a case, when already read."""
    if derived is None:
        derived = runnable_here(dist, set())[0]
    extras = declared_extras(dist)
    admitted: dict[str, list[tuple[Requirement, str]]] = {}
    for server_dir, reqs in extras.items():
        for req in reqs:
            parsed = _parse(req)
            if parsed is not None:
                admitted.setdefault(canonicalize_name(parsed.name), []).append((parsed, server_dir))
    excluded: dict[str, str] = {}
    for env in derived:
        wanted: dict[str, list[str]] = {}
        problem = ""
        for server_dir in env.all_server_dirs:
            if server_dir in extras:
                continue
            reqs = server_requirements(dist, server_dir)
            for req in reqs:
                parsed = _parse(req)
                clash = _clash(parsed, admitted) if parsed is not None else f"{req!r} is not a requirement"
                if clash:
                    problem = problem or clash
            if reqs:
                wanted[server_dir] = reqs
        if problem:
            excluded[env.name] = problem
            continue
        for server_dir, reqs in wanted.items():
            extras[server_dir] = reqs
            for req in reqs:
                parsed = _parse(req)
                admitted.setdefault(canonicalize_name(parsed.name), []).append((parsed, server_dir))
    return extras, excluded


def _parse(text: str) -> Requirement | None:
    try:
        return Requirement(text)
    except InvalidRequirement:
        return None


def _clash(req: Requirement, admitted: dict[str, list[tuple[Requirement, str]]]) -> str:
    """Why `req` cannot join what is admitted: a pinned version the other excludes, either way ("" when none)."""
    for other, where in admitted.get(canonicalize_name(req.name), []):
        for a, b in ((req, other), (other, req)):
            pinned = [s.version for s in a.specifier if s.operator == "=="]
            if any(not b.specifier.contains(v, prereleases=True) for v in pinned):
                return f"needs {req} while {where} needs {other}"
    return ""


def render_project(source: GymSource, extras: dict[str, list[str]], where: Path | None = None) -> dict:
    where = where or project_dir(source)
    gymgate_path = os.path.relpath(repo_root(), where) if where.is_relative_to(envs_dir()) else str(repo_root())
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


def project_text(source: GymSource, wide: bool = False) -> str:
    """The pyproject.toml the ref's project declares (`wide`: the variant with every runnable server)."""
    where = project_dir(source, wide)
    dist = Distribution(source)
    extras, excluded = wide_extras(dist) if wide else (declared_extras(dist), {})
    data = render_project(source, extras, where)
    if excluded:
        data["tool"]["gymgate"]["left-out"] = excluded
    if not data["tool"]["uv"]["exclude-newer"]:
        del data["tool"]["uv"]["exclude-newer"]
    header = f"# Generated by `nox -s lock` for {source.describe()}. Do not edit by hand.\n"
    return header + tomli_w.dumps(data)


def write_project(source: GymSource, wide: bool = False, text: str | None = None) -> Path:
    where = project_dir(source, wide)
    where.mkdir(parents=True, exist_ok=True)
    (where / "pyproject.toml").write_text(text or project_text(source, wide))
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
