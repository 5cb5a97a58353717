"""Choosing an interpreter that satisfies a Gym's requires-python, the way uv would, and offline when asked.

Candidates come from PATH, pyenv's installed versions (pyenv shims are skipped: on these machines a shim for a
non-global version exits 127), the CPythons gymgate built into its cache (envs/cpython.py) and uv's managed ones.
When none matches and downloads are allowed (neither UV_PYTHON_DOWNLOADS=never nor GYMGATE_PYTHON_DOWNLOADS=never),
uv installs one (`uv python install`); when that is not possible either, gymgate builds the newest CPython release it
declares that meets the requirement into its cache, once, saying so first (envs/cpython.py; the same path
`nox -s tests` takes, so a new user's first `nox -s accept` does not stop) — unless GYMGATE_PYTHON_BUILD=never, when
the error names every remedy as a command the user can type. The chosen interpreter's exact version and build are
part of the environment's key and of every run's provenance.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from gymgate.envs import cpython, cpython_source
from gymgate.errors import BuildError, GymgateError, InfraError
from gymgate.locations import cache_dir
from gymgate.options import PYTHON_BUILD, PYTHON_DOWNLOADS

PROBE_CACHE = "interpreters-2.json"
PROBE = (
    "import json, sys, platform; "
    "print(json.dumps([platform.python_version(), platform.python_implementation(), sys.version]))"
)
DOWNLOADS_VARS = ("UV_PYTHON_DOWNLOADS", PYTHON_DOWNLOADS.var)  # either set to "never" forbids downloads
BUILD_VAR = PYTHON_BUILD.var  # "never": stop with the remedies instead of building a missing interpreter
UV_INSTALL_TIMEOUT_S = 900


@dataclass(frozen=True)
class Interpreter:
    path: Path
    version: str
    implementation: str
    build: str = ""  # sys.version: the exact build (date, compiler), plus the source digest of a gymgate build

    def describe(self) -> str:
        return f"{self.version} ({self.path})"

    def provenance(self) -> dict[str, str]:
        return {
            "version": self.version,
            "implementation": self.implementation,
            "path": str(self.path),
            "build": self.build,
        }


def _path_candidates() -> list[Path]:
    found = []
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        if not directory or "shims" in Path(directory).parts:
            continue
        for name in ["python3"] + [f"python3.{minor}" for minor in range(8, 20)]:
            exe = Path(directory) / name
            if exe.is_file() and os.access(exe, os.X_OK):
                found.append(exe)
    return found


def _pyenv_candidates() -> list[Path]:
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    return sorted(p for p in root.glob("versions/*/bin/python3") if p.is_file())


def _uv_candidates() -> list[Path]:
    uv = shutil.which("uv")
    if not uv:
        return []
    env = dict(os.environ, UV_PYTHON_DOWNLOADS="never")
    try:
        out = subprocess.run(
            [uv, "python", "list", "--only-installed", "--output-format", "json"],
            capture_output=True,
            text=True,
            timeout=30,
            env=env,
            check=False,
        ).stdout
        return [Path(e["path"]) for e in json.loads(out or "[]") if "shims" not in Path(e["path"]).parts]
    except (OSError, subprocess.TimeoutExpired, ValueError, KeyError):
        return []


def probe(path: Path, known: dict[str, Any] | None = None) -> Interpreter | None:
    """Ask the interpreter its version; `known` caches answers by (real path, size, mtime)."""
    try:
        real = path.resolve()
        stat = real.stat()
    except OSError:
        return None
    key = f"{real}|{stat.st_size}|{stat.st_mtime_ns}"
    if known is not None and key in known:
        version, implementation, build = known[key]
    else:
        try:
            out = subprocess.run([str(path), "-c", PROBE], capture_output=True, text=True, timeout=20, check=False)
            version, implementation, build = json.loads(out.stdout)
        except (OSError, subprocess.TimeoutExpired, ValueError):
            return None
        if known is not None:
            known[key] = [version, implementation, build]
    built = cpython.build_info(path)
    if built.get("source_sha256"):
        build += f"; built by gymgate from {built.get('source')} sha256:{built['source_sha256']}"
    return Interpreter(path=path, version=version, implementation=implementation, build=build)


def _load_known() -> dict[str, Any]:
    try:
        return json.loads((cache_dir() / PROBE_CACHE).read_text())
    except (OSError, ValueError):
        return {}


def _save_known(known: dict[str, Any]) -> None:
    target = cache_dir() / PROBE_CACHE
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}")
        tmp.write_text(json.dumps(known))
        os.replace(tmp, target)
    except OSError:
        pass  # a cache that cannot be written only costs time


def discover(include_uv: bool = True) -> list[Interpreter]:
    """Every working CPython found, one per real executable, ordered by version."""
    seen: dict[Path, Interpreter] = {}
    known = _load_known()
    for candidate in _pyenv_candidates() + _path_candidates() + cpython.installed():
        real = candidate.resolve()
        if real in seen:
            continue
        interp = probe(candidate, known)
        if interp and interp.implementation == "CPython":
            seen[real] = interp
    if include_uv:
        for candidate in _uv_candidates():
            interp = probe(candidate, known)
            if interp and interp.implementation == "CPython":
                seen.setdefault(candidate.resolve(), interp)
    _save_known(known)
    by_version: dict[str, Interpreter] = {}
    for interp in seen.values():
        by_version.setdefault(interp.version, interp)
    return sorted(by_version.values(), key=lambda i: Version(i.version))


def downloads_allowed() -> bool:
    uv_never = os.environ.get(DOWNLOADS_VARS[0], "").strip().lower() == "never"
    return not uv_never and PYTHON_DOWNLOADS.value() != "never"


def builds_allowed() -> bool:
    return PYTHON_BUILD.value() != "never"


def _matching(spec: SpecifierSet, candidates: list[Interpreter]) -> Interpreter | None:
    return next((i for i in candidates if Version(i.version) in spec), None)


def uv_install(requires_python: str) -> list[Interpreter]:
    """Ask uv for a managed CPython matching the requirement (its download); [] when uv could not."""
    uv = shutil.which("uv")
    if not uv:
        return []
    try:
        subprocess.run(
            [uv, "python", "install", requires_python],
            capture_output=True,
            text=True,
            timeout=UV_INSTALL_TIMEOUT_S,
            check=True,
        )
    except (OSError, subprocess.TimeoutExpired, subprocess.CalledProcessError):
        return []
    return discover()


def _searches(found: list[Interpreter] | None) -> Iterator[list[Interpreter]]:
    """The interpreters to choose from, one search at a time: the given ones, or the machine's own, then uv's too.
    uv's own discovery costs a subprocess (where pyenv's shims are on PATH, one per interpreter pyenv knows): it is
    asked only when PATH, pyenv and gymgate's builds have none."""
    if found is not None:
        yield found
        return
    yield discover(include_uv=False)
    yield discover()


def already_here(requires_python: str) -> Interpreter | None:
    """The interpreter `select` would choose among those on this machine now (nothing downloaded or built), or None:
    what a cluster run tells its nodes to provide (remote/unit_spec.py)."""
    try:
        spec = SpecifierSet(requires_python or "")
    except InvalidSpecifier:
        return None
    return next((chosen for found in _searches(None) if (chosen := _matching(spec, found))), None)


def select(requires_python: str, what: str, found: list[Interpreter] | None = None) -> Interpreter:
    """The lowest interpreter satisfying ``requires_python`` (the oldest supported is the one Gym's CI tests)."""
    try:
        spec = SpecifierSet(requires_python or "")
    except InvalidSpecifier as exc:
        raise InfraError(f"{what} declares an invalid requires-python {requires_python!r}: {exc}") from exc
    for candidates in _searches(found):
        chosen = _matching(spec, candidates)
        if chosen:
            return chosen
        found = candidates
    if downloads_allowed():
        chosen = _matching(spec, uv_install(requires_python))
        if chosen:
            return chosen
        tried = " uv could not download one (`uv python install` failed or this machine has no route to it)."
    else:
        tried = " Downloads are off (" + ", ".join(f"{v}=never" for v in DOWNLOADS_VARS if os.environ.get(v)) + ")."
    have = ", ".join(i.describe() for i in found) or "none"
    buildable = [r for r in cpython.releases() if Version(r.version) in spec]
    missing = (
        f"{what} requires Python {requires_python}, and no interpreter on this machine satisfies it (found: {have})."
    )
    if buildable and builds_allowed():
        return _build(buildable[-1], missing + tried)
    build = (
        f"`nox -s python -- build {buildable[-1].version}` (fetches Debian's source with apt-get; or pass a tarball "
        "with --source) builds one into gymgate's cache, once"
        if buildable
        else "install a matching CPython (pyenv install, or put it on PATH)"
    )
    off = f" Building one is off ({BUILD_VAR}=never)." if buildable else ""
    raise BuildError(
        f"{missing}{tried}{off} Remedies: {build}; or let uv download one (unset UV_PYTHON_DOWNLOADS=never / "
        "GYMGATE_PYTHON_DOWNLOADS=never on a machine that can reach uv's Python downloads)."
    )


def _build(release: cpython.Release, why: str) -> Interpreter:
    """Build (or copy from GYMGATE_PYTHON_BUILDS) the declared release into gymgate's cache, announced first: a
    person sees why the run pauses and for how long."""

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    say(
        f"{why} Providing CPython {release.version} in gymgate's cache, once: {cpython.BUILD_DURATION} "
        f"(later runs find it; {BUILD_VAR}=never stops here instead)."
    )
    try:
        exe = cpython_source.provide_release(release, log=say)
    except GymgateError as exc:
        raise InfraError(
            f"{why} gymgate could not build CPython {release.version}: {exc}\nRemedies: "
            f"`nox -s python -- build {release.version} --source <tarball> --sha256 <digest>` with a source tarball "
            "you trust; or install a matching CPython (pyenv install, or put it on PATH)."
        ) from exc
    found = probe(exe)
    if found is None:
        raise InfraError(f"the CPython gymgate provided at {exe} does not run")
    return found
