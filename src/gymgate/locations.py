"""Where gymgate keeps things: its declarative data (pins, locks, cases, reviews) and the per-user cache.

gymgate runs from a checkout (its data beside `src/`) or installed as a tool (`uv tool install`, `uvx --from`): the
wheel carries the same data under `gymgate/_data/`. A pin environment installs gymgate from a source tree, so an
installed gymgate lays one out once in the cache — its package and its data, keyed by the installed files' digest —
and works from it exactly as from a checkout (`data_root`)."""

from __future__ import annotations

import hashlib
import os
import shutil
from functools import cache
from importlib import metadata
from pathlib import Path

CACHE_VAR = "GYMGATE_CACHE"  # the --cache-dir option's variable (options.py declares the option with it)
CASES_VAR = "GYMGATE_CASES"  # the --cases option's variable: a repository's own case folders (cases/environments.py)
ROOT_VAR = "GYMGATE_REPO_ROOT"  # a data root elsewhere (tests; a remote node's transferred checkout)

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parent.parent
WHEEL_DATA = PACKAGE_DIR / "_data"  # what the wheel carries of the checkout (pyproject.toml's force-include)
DATA_DIRS = ("pins", "envs", "cases", "acks", "shards", "examples")
PROJECT_FILES = ("pyproject.toml", "README.md", "uv.lock")  # what building gymgate into a pin environment reads
LAID_OUT = ".laid-out"  # marks a complete data root in the cache


def is_checkout(root: Path) -> bool:
    return (root / "pins").is_dir() and (root / "pyproject.toml").is_file() and (root / "src" / "gymgate").is_dir()


@cache
def installed() -> bool:
    """gymgate runs installed (from a wheel), not from a checkout."""
    return not is_checkout(REPO_ROOT) and WHEEL_DATA.is_dir()


def repo_root() -> Path:
    """The tree holding pins/, envs/ and cases/: the checkout, or for an installed gymgate its laid-out copy."""
    explicit = os.environ.get(ROOT_VAR)
    if explicit:
        return Path(explicit)
    return _laid_out() if installed() else REPO_ROOT


def child_package() -> Path:
    """gymgate's package as a pin environment imports it (what a child is pointed at by path): the checkout's, or
    an installed gymgate's laid-out copy — never the tool's own, which the environment does not import."""
    return _laid_out() / "src" / "gymgate" if installed() else PACKAGE_DIR


@cache
def _laid_out() -> Path:
    """The installed package and its data as a source tree in the cache, laid out once per installed content."""
    from gymgate.locks import held  # noqa: PLC0415 - only an installed gymgate lays out a tree

    target = cache_dir() / "installed" / _installed_digest()[:16]
    if (target / LAID_OUT).is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with held(target.parent / f"{target.name}.lock", 300, f"laying out gymgate's data in {target}"):
        if (target / LAID_OUT).is_file():
            return target
        shutil.rmtree(target, ignore_errors=True)
        for item in WHEEL_DATA.iterdir():
            copy = shutil.copytree if item.is_dir() else shutil.copyfile
            copy(item, target / item.name)
        shutil.copytree(PACKAGE_DIR, target / "src" / "gymgate", ignore=shutil.ignore_patterns("_data", "__pycache__"))
        (target / LAID_OUT).write_text(str(PACKAGE_DIR) + "\n")
    return target


def _installed_digest() -> str:
    """The installed files' digest: the wheel's RECORD (every file with its hash), else the package tree's."""
    try:
        record = metadata.distribution("gymgate").read_text("RECORD")
    except metadata.PackageNotFoundError:
        record = None
    if record:
        return hashlib.sha256(record.encode()).hexdigest()
    digest = hashlib.sha256()
    for path in sorted(PACKAGE_DIR.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(PACKAGE_DIR)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def pins_dir() -> Path:
    return repo_root() / "pins"


def envs_dir() -> Path:
    return repo_root() / "envs"


def cases_dir() -> Path:
    """gymgate's own cases/; GYMGATE_CASES_DIR points elsewhere (fault-injection tests use it)."""
    explicit = os.environ.get("GYMGATE_CASES_DIR")
    return Path(explicit) if explicit else repo_root() / "cases"


def folder_list(raw: str) -> list[Path]:
    """Folders named in one variable (GYMGATE_CASES, GYMGATE_ACKS): separated by ':' (os.pathsep), as PATH is."""
    return [Path(p) for p in raw.split(os.pathsep) if p.strip()]


def own_case_dirs() -> list[Path]:
    """The repository's own case folders (--cases, handed to every child as its variable by the command line)."""
    return folder_list(os.environ.get(CASES_VAR, ""))


def case_dirs() -> list[Path]:
    """Every folder cases are read from, the repository's first (the first case of a name wins)."""
    return list(dict.fromkeys([*own_case_dirs(), cases_dir()]))


def cache_dir() -> Path:
    """Content-addressed environments, resolved refs and git mirrors live here, outside the checkout,
    so clones and CI runs on the same machine share them."""
    explicit = os.environ.get(CACHE_VAR)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gymgate"
