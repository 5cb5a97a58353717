"""Forking Gym servers from a pre-imported parent (issue 29): the zygote that forks them (zygote.py), the run's one
zygote started and stopped (service.py), the client a server's venv runs as its `python` (client.py), and the venv
that puts that client where Gym looks for an interpreter (venv.py).

On by default; GYMGATE_LAUNCHER=exec makes every server a fresh interpreter, exactly as Gym starts it (how the two
were shown to give the same results: docs/architecture.md, "Starting Gym's servers")."""

from __future__ import annotations

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


def preloaded() -> list[str]:
    return list(tomllib.loads(Path(__file__).with_name("preload.toml").read_text())["modules"])
