"""An environment built from its nearest neighbour instead of from scratch.

Every commit between two Gym releases locks the same packages but nemo-gym; a full `uv sync`
still installs and byte-compiles all of them (~35 s, 1.6 GB). So a new environment starts as a hard-linked copy of a
complete one whose lock differs in a few packages (same interpreter, same checkout), has its scripts pointed at the
new place, is synced exactly to its own lock by uv (which replaces only what differs; a replaced file is a new file,
so the neighbour never changes), and byte-compiles only the distributions that differ. The result holds exactly the
packages of its own lock, like any other environment; its completion mark names the neighbour and what was installed.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path

MAX_CHANGED = 8  # a neighbour further away than this is not worth copying: sync from scratch
LOCK_COPY = ".gymgate-uv.lock"  # the lock an environment was synced to, kept in it
LOCKED = "locked"  # the completion mark's field holding `locked()` of that lock: what neighbours are measured by
COPY_TIMEOUT_S = 300
COMPILE_TIMEOUT_S = 600

_COMPILE = """
import compileall, importlib.metadata, sys
for name in sys.argv[1:]:
    try:
        dist = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        continue  # removed by the sync
    for file in dist.files or []:
        if file.suffix == ".py":
            compileall.compile_file(str(file.locate()), quiet=2)
"""


@dataclass(frozen=True)
class Neighbour:
    key: str
    path: Path
    changed: list[str]  # packages of the new lock that the neighbour does not hold as locked (added or different)


def locked(lock_text: str) -> dict[str, str]:
    """package -> a digest of what exactly is locked (version and source), for telling which packages two locks
    differ in. Kept in every environment's completion mark, so finding a neighbour reads marks, not locks (parsing
    a 190-package lock takes ~0.1 s; a cache holds hundreds of environments)."""
    found = {}
    for package in tomllib.loads(lock_text).get("package", []):
        spec = json.dumps([package.get("version"), package.get("source")], sort_keys=True)
        found[package["name"]] = hashlib.sha256(spec.encode()).hexdigest()[:16]
    return found


def find(envs: Path, lock: Path, marks: dict[str, str], mark_name: str) -> Neighbour | None:
    """The complete environment under `envs` nearest to `lock` among those whose mark matches `marks` (format,
    interpreter, checkout), if it differs in at most MAX_CHANGED packages."""
    wanted = locked(lock.read_text())
    best: Neighbour | None = None
    for mark in sorted(envs.glob(f"*/{mark_name}")):  # ties go to the same neighbour every time
        try:
            data = json.loads(mark.read_text())
        except (OSError, ValueError):
            continue  # being replaced
        theirs = data.get(LOCKED) if isinstance(data, dict) else None
        if not isinstance(theirs, dict) or any(data.get(k) != v for k, v in marks.items()):
            continue  # built before marks kept their lock's packages, or for another interpreter or checkout
        changed = sorted(name for name, spec in wanted.items() if theirs.get(name) != spec)
        if len(changed) <= MAX_CHANGED and (best is None or len(changed) < len(best.changed)):
            best = Neighbour(mark.parent.name, mark.parent, changed)
    return best


def copy_env(neighbour: Path, path: Path, mark_name: str) -> None:
    """A hard-linked copy of `neighbour` at `path`, without its mark and lock, its scripts pointing at `path`."""
    subprocess.run(["cp", "-al", str(neighbour), str(path)], check=True, timeout=COPY_TIMEOUT_S, capture_output=True)
    for name in (mark_name, LOCK_COPY):
        (path / name).unlink(missing_ok=True)
    old, new = str(neighbour).encode(), str(path).encode()
    for script in (path / "bin").iterdir():
        if script.is_symlink() or not script.is_file():
            continue
        content = script.read_bytes()
        if old in content:
            mode = script.stat().st_mode
            script.unlink()  # a new file: the neighbour's (hard-linked) copy stays as it was
            script.write_bytes(content.replace(old, new))
            os.chmod(script, mode)


def missing_files(env: Path, most: int = 5) -> list[str]:
    """Files the environment's distributions say they installed (their RECORDs) that are not there, at most `most`:
    a copy must be whole before it is trusted (CI once met a copy without pytest's `py.py`, and every environment
    built from it inherited the hole)."""
    missing: list[str] = []
    for record in sorted(env.glob("lib/python*/site-packages/*.dist-info/RECORD")):
        site = record.parent.parent
        for row in record.read_text(errors="replace").splitlines():
            name = row.split(",", 1)[0]
            if not name or name.startswith("..") or "__pycache__" in name or name.endswith(".pyc"):
                continue  # scripts outside site-packages are rewritten; bytecode is made as it is needed
            if not (site / name).exists():
                missing.append(name)
                if len(missing) >= most:
                    return missing
    return missing


def compile_changed(python: Path, names: list[str]) -> None:
    """Byte-compile the distributions the sync installed (the rest came compiled from the neighbour)."""
    if names:
        subprocess.run(
            [str(python), "-c", _COMPILE, *names], check=True, timeout=COMPILE_TIMEOUT_S, capture_output=True
        )
