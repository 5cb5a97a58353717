"""Reading a local Gym: a wheel file or a source tree (a checkout, or a commit exported from git)."""

from __future__ import annotations

import hashlib
import re
import tomllib
import zipfile
from pathlib import Path

from gymgate.errors import UsageError

# Directories that never change what runs (VCS data, caches, virtualenvs, build leftovers).
IGNORED_DIRS = {".git", "__pycache__", ".venv", "venv", "build", "dist", ".mypy_cache", ".pytest_cache", ".ruff_cache"}


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def tree_files(root: Path) -> list[Path]:
    """The files that make a tree's content (what its digest covers, what a cluster node is sent), sorted."""
    files = []
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if any(part in IGNORED_DIRS or part.endswith(".egg-info") for part in rel.parts):
            continue
        if path.is_file() and not path.is_symlink() and path.name != ".gymgate-complete":
            files.append(rel)
    return sorted(files, key=lambda p: p.as_posix())


def tree_digest(root: Path) -> str:
    """SHA256 over every file's relative path and bytes, in sorted order; independent of mtimes."""
    digest = hashlib.sha256()
    for rel in tree_files(root):
        digest.update(rel.as_posix().encode() + b"\0")
        digest.update(sha256_file(root / rel).encode() + b"\n")
    return digest.hexdigest()


def wheel_metadata(path: Path) -> tuple[str, str]:
    """(version, requires-python) from a wheel's METADATA."""
    with zipfile.ZipFile(path) as wheel:
        names = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
        if not names:
            raise UsageError(f"{path} is not a wheel (no .dist-info/METADATA)")
        text = wheel.read(names[0]).decode()
    fields = {}
    for line in text.splitlines():
        if not line.strip():
            break
        key, _, value = line.partition(":")
        fields.setdefault(key.strip().lower(), value.strip())
    if fields.get("name", "").replace("_", "-").lower() != "nemo-gym":
        raise UsageError(f"{path} is a wheel of {fields.get('name')!r}, not nemo-gym")
    return fields.get("version", "unknown"), fields.get("requires-python", "")


def tree_metadata(root: Path) -> tuple[str, str]:
    """(version, requires-python) of a Gym source tree, read the way its build backend would."""
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file():
        raise UsageError(f"{root} is not a Gym checkout: it has no pyproject.toml")
    project = tomllib.loads(pyproject.read_text()).get("project", {})
    if project.get("name", "").replace("_", "-").lower() != "nemo-gym":
        raise UsageError(f"{root} is a checkout of {project.get('name')!r}, not nemo-gym")
    version = project.get("version") or _package_info_version(root) or "unknown"
    return version, project.get("requires-python", "")


def _package_info_version(root: Path) -> str | None:
    info = root / "nemo_gym" / "package_info.py"
    if not info.is_file():
        return None
    text = info.read_text()
    parts = {}
    for key in ("MAJOR", "MINOR", "PATCH", "PRE_RELEASE"):
        match = re.search(rf"^{key}\s*=\s*(.+)$", text, re.M)
        if not match:
            return None
        parts[key] = match.group(1).strip().strip("\"'")
    return f"{parts['MAJOR']}.{parts['MINOR']}.{parts['PATCH']}{parts['PRE_RELEASE']}"
