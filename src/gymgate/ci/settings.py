"""The options a CI job sets once for every command, as GYMGATE_* environment variables. A flag on the command line
always wins over its variable; a variable that cannot be read is a usage error naming it (exit 2), never ignored."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from gymgate.errors import UsageError

T = TypeVar("T")


@dataclass(frozen=True)
class Setting:
    var: str
    flag: str
    meaning: str


BASELINE = Setting("GYMGATE_BASELINE", "--baseline", "the ref a bump is judged against (default: the baseline pin)")
WORKERS = Setting("GYMGATE_WORKERS", "-n/--workers", "pytest-xdist workers: auto, N, or 0")
RERUNS = Setting("GYMGATE_RERUNS", "--reruns", "attempts added for each path that does not pass (0-10)")
ATTEMPTS = Setting("GYMGATE_ATTEMPTS", "--attempts", "attempts of every path in the same Gym (2-10)")
RUNS = Setting("GYMGATE_RUNS", "--runs-dir", "where run folders go (default: runs/ in the checkout)")
CACHE = Setting(
    "GYMGATE_CACHE", "--cache-dir", "environments, resolved refs and git mirrors (default: ~/.cache/gymgate)"
)
GYM_REPO = Setting("GYMGATE_GYM_REPO", "--gym-repo", "the git repository SHAs, tags and branches are resolved in")
ENVS = Setting("GYMGATE_ENVS", "--env", "the environments to run, comma-separated (default: the `default` set)")
SETTINGS = (BASELINE, WORKERS, RERUNS, ATTEMPTS, RUNS, CACHE, GYM_REPO, ENVS)


def from_env(setting: Setting, convert: Callable[[str], T], default: T) -> T:
    """The variable's value as `convert` reads a flag's, or `default` when it is unset or empty."""
    raw = os.environ.get(setting.var, "").strip()
    if not raw:
        return default
    try:
        return convert(raw)
    except (argparse.ArgumentTypeError, ValueError) as exc:
        raise UsageError(f"${setting.var}={raw!r} (the default of {setting.flag}): {exc}") from None


def help_text(setting: Setting, text: str) -> str:
    return f"{text} (or ${setting.var})"
