"""Where gymgate keeps things: the repository's declarative data and the per-user cache."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_VAR = "GYMGATE_CACHE"  # the --cache-dir option's variable (options.py declares the option with it)

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parent.parent


def repo_root() -> Path:
    """The checkout holding pins/, envs/ and cases/ (overridable for tests)."""
    return Path(os.environ.get("GYMGATE_REPO_ROOT", REPO_ROOT))


def pins_dir() -> Path:
    return repo_root() / "pins"


def envs_dir() -> Path:
    return repo_root() / "envs"


def cache_dir() -> Path:
    """Content-addressed environments, resolved refs and git mirrors live here, outside the checkout,
    so clones and CI runs on the same machine share them."""
    explicit = os.environ.get(CACHE_VAR)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gymgate"
