"""Locks of generated projects kept for the next project like them: a Gym tree installed editable (a checkout, a
commit's tree) resolves exactly as any other tree whose project differs only in where the tree lies and what its
project is called — which is every mutant of one release, every commit of a bisect that keeps Gym's requirements,
and every edit a developer runs. Locking online costs ~400 index requests (4 s here); a stored lock costs one
offline check.

A stored lock is used only when `uv lock --locked --offline` accepts it for the new project: uv builds the tree's
metadata and refuses a lock that its requirements (or gymgate's, or the project's) no longer match. Anything else
(no stored lock, uv refuses, a tree path TOML would escape) locks online as before, and that lock is stored.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import tomllib
from pathlib import Path

from gymgate.atomic import write_text_atomic
from gymgate.envs.project import LOCK_TIMEOUT_S, uv_env
from gymgate.envs.python import Interpreter
from gymgate.locations import cache_dir

FORMAT = "1"  # bump when what a key covers changes
NAME, TREE = "@gymgate-project@", "@gym-tree@"  # what a stored lock says instead of the project's name and tree


def _store() -> Path:
    return cache_dir() / "locks"


def _identity(where: Path) -> tuple[str, str] | None:
    """The project's name and its editable Gym tree's path, or None when the project has no such tree (a pin, a
    wheel: their locks are their own) or either would be escaped in TOML (then the text could not be swapped)."""
    data = tomllib.loads((where / "pyproject.toml").read_text())
    gym = data.get("tool", {}).get("uv", {}).get("sources", {}).get("nemo-gym", {})
    name, tree = data.get("project", {}).get("name", ""), gym.get("path", "")
    if not (gym.get("editable") and name and tree) or any(c in tree for c in '"\\\n'):
        return None
    return name, tree


def _key(where: Path, interp: Interpreter) -> str:
    """What decides the resolution: the project with its name, its tree's path and gymgate's own notes left out,
    and the interpreter it is locked for."""
    data = tomllib.loads((where / "pyproject.toml").read_text())
    data.get("tool", {}).pop("gymgate", None)
    data["project"]["name"] = NAME
    data["tool"]["uv"]["sources"]["nemo-gym"]["path"] = TREE
    text = json.dumps({"format": FORMAT, "project": data, "python": str(interp.path)}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def seed(where: Path, interp: Interpreter) -> bool:
    """Put the stored lock of a project like this one in place, if uv accepts it offline as this project's lock
    unchanged. False (and no lock left behind): the project has a lock already, nothing is stored, or uv refused it."""
    identity = None if (where / "uv.lock").exists() else _identity(where)
    stored = _store() / f"{_key(where, interp)}.lock" if identity else None
    if stored is None or not stored.is_file():
        return False
    name, tree = identity
    text = stored.read_text().replace(f'"{NAME}"', f'"{name}"').replace(f'"{TREE}"', f'"{tree}"')
    write_text_atomic(where / "uv.lock", text)
    args = ["uv", "lock", "--locked", "--offline", "--project", str(where), "--python", str(interp.path)]
    try:
        accepted = subprocess.run(args, env=uv_env(), capture_output=True, timeout=LOCK_TIMEOUT_S).returncode == 0
    except subprocess.TimeoutExpired:
        accepted = False
    if not accepted:
        (where / "uv.lock").unlink(missing_ok=True)
    return accepted


def keep(where: Path, interp: Interpreter) -> None:
    """Store the project's lock (just locked online) for the next project like it."""
    identity = _identity(where)
    if identity is None:
        return
    name, tree = identity
    text = (where / "uv.lock").read_text()
    if f'"{tree}"' not in text:
        return
    text = text.replace(f'"{name}"', f'"{NAME}"').replace(f'"{tree}"', f'"{TREE}"')
    write_text_atomic(_store() / f"{_key(where, interp)}.lock", text)
