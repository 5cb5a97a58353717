"""Forking Gym servers from a pre-imported parent (issue 29): the zygote that forks them (zygote.py), the run's one
zygote started and stopped (service.py), the client a server's venv runs as its `python` (client.py), and the venv
that puts that client where Gym looks for an interpreter (venv.py).

On by default; GYMGATE_LAUNCHER=exec makes every server a fresh interpreter, exactly as Gym starts it (how the two
were shown to give the same results: docs/architecture.md, "Starting Gym's servers")."""

from __future__ import annotations

import fnmatch
import os
import tomllib
from pathlib import Path

MODE_VARIABLE = "GYMGATE_LAUNCHER"
FORK, EXEC = "fork", "exec"
MODES = (FORK, EXEC)


def mode() -> str:
    """The launcher this run uses (a value outside MODES is refused where the run starts: service.serving)."""
    return os.environ.get(MODE_VARIABLE) or FORK


def enabled() -> bool:
    return mode() == FORK


def _declared() -> dict:
    return tomllib.loads(Path(__file__).with_name("preload.toml").read_text())


def preloaded() -> list[str]:
    """The modules the zygote imports (preload.toml)."""
    return list(_declared()["modules"])


def zygotes() -> dict[str, dict[str, str]]:
    """Each zygote a run starts, with the start-up variables it imports with unless the run sets them."""
    return {name: dict(values) for name, values in _declared()["zygotes"].items()}


def never_preloaded() -> list[str]:
    return list(_declared()["never"])


def read_at_import(environ: dict[str, str]) -> dict[str, str]:
    """The part of `environ` that preloading or interpreter start-up reads (preload.toml's `environment`): a forked
    process is what a fresh one would have been only when this part is the same."""
    declared = _declared()
    patterns, dynamic = declared["environment"], set(declared["dynamic"])
    return {k: v for k, v in environ.items() if k not in dynamic and any(fnmatch.fnmatchcase(k, p) for p in patterns)}
