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

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from gymgate.errors import InfraError

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


def probe(path: Path) -> Interpreter | None:
    try:
        out = subprocess.run([str(path), "-c", PROBE], capture_output=True, text=True, timeout=20, check=False)
        version, implementation = json.loads(out.stdout)
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return None
    return Interpreter(path=path, version=version, implementation=implementation)


def discover() -> list[Interpreter]:
    """Every working CPython found, one per real executable, ordered by version."""
    seen: dict[Path, Interpreter] = {}
    for candidate in _pyenv_candidates() + _path_candidates() + _uv_candidates():
        real = candidate.resolve()
        if real in seen:
            continue
        interp = probe(candidate)
        if interp and interp.implementation == "CPython":
            seen[real] = interp
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
    found = discover() if found is None else found
    for interp in found:
        if Version(interp.version) in spec:
            return interp
    have = ", ".join(i.describe() for i in found) or "none"
    raise InfraError(
        f"{what} requires Python {requires_python}, and no interpreter on this machine satisfies it "
        f"(found: {have}). Install a matching CPython (pyenv install, or put it on PATH); "
        "gymgate never lets uv download one."
    )
