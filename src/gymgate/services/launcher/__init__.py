"""Forking Gym servers from a pre-imported parent (issue 29): the zygote that forks them, the client a server's venv
runs as its `python`, and the venv that puts that client where Gym looks for an interpreter.

Off unless GYMGATE_LAUNCHER=fork (work in progress: measured, not yet proven equivalent on every pin)."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

MODE_VARIABLE = "GYMGATE_LAUNCHER"
FORK = "fork"


def enabled() -> bool:
    return os.environ.get(MODE_VARIABLE) == FORK


def preloaded() -> list[str]:
    return list(tomllib.loads(Path(__file__).with_name("preload.toml").read_text())["modules"])
