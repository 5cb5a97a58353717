"""Choosing an interpreter that satisfies a Gym's requires-python, without ever letting uv download one.

Candidates come from PATH, uv's own discovery and pyenv's installed versions (pyenv shims are skipped:
on these machines a shim for a non-global version exits 127).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from gymgate.errors import BuildError, InfraError
from gymgate.locations import cache_dir

PROBE_CACHE = "interpreters.json"
PROBE = "import json, sys, platform; print(json.dumps([platform.python_version(), platform.python_implementation()]))"


@dataclass(frozen=True)
class Interpreter:
    path: Path
    version: str
    implementation: str

    def describe(self) -> str:
        return f"{self.version} ({self.path})"


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
        version, implementation = known[key]
    else:
        try:
            out = subprocess.run([str(path), "-c", PROBE], capture_output=True, text=True, timeout=20, check=False)
            version, implementation = json.loads(out.stdout)
        except (OSError, subprocess.TimeoutExpired, ValueError):
            return None
        if known is not None:
            known[key] = [version, implementation]
    return Interpreter(path=path, version=version, implementation=implementation)


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
    for candidate in _pyenv_candidates() + _path_candidates():
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


def select(requires_python: str, what: str, found: list[Interpreter] | None = None) -> Interpreter:
    """The lowest interpreter satisfying ``requires_python`` (the oldest supported is the one Gym's CI tests)."""
    try:
        spec = SpecifierSet(requires_python or "")
    except InvalidSpecifier as exc:
        raise InfraError(f"{what} declares an invalid requires-python {requires_python!r}: {exc}") from exc
    for candidates in [found] if found is not None else [discover(include_uv=False), discover()]:
        # uv's own discovery costs a subprocess: it is asked only when PATH and pyenv have no match.
        for interp in candidates:
            if Version(interp.version) in spec:
                return interp
        found = candidates
    have = ", ".join(i.describe() for i in found) or "none"
    raise BuildError(
        f"{what} requires Python {requires_python}, and no interpreter on this machine satisfies it "
        f"(found: {have}). Install a matching CPython (pyenv install, or put it on PATH); "
        "gymgate never lets uv download one."
    )
