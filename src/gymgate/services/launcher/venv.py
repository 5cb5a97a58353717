"""The venv Gym finds in every server folder when the launcher serves a run: its `python` is the launcher client,
everything else is the pin's environment (activate sets the same VIRTUAL_ENV; PATH finds the client first, then the
pin's own bin/, so a bare `python` is the client too and `-c`, `-m` fall through to the real interpreter)."""

from __future__ import annotations

import contextlib
import os
import shlex
from pathlib import Path

from gymgate.services.launcher import client

WRAPPER = """#!/bin/sh
# gymgate launcher: `python script.py` is forked from the run's zygote; anything else runs the real interpreter.
exec {python} -I -S {client} "$@"
"""
ACTIVATE = """# gymgate launcher: the pin's environment, its `python` the launcher client
export VIRTUAL_ENV={prefix}
export PATH={bin}:{prefix}/bin:"$PATH"
unset PYTHONHOME
"""


def launcher_venv(folder: Path, prefix: Path) -> Path:
    """`folder` made into the launcher venv for the environment at `prefix` (idempotent: workers share a run)."""
    bin_dir = folder / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    python = shlex.quote(str(prefix / "bin" / "python"))
    files = {
        "python": WRAPPER.format(python=python, client=shlex.quote(client.__file__)),
        "activate": ACTIVATE.format(prefix=shlex.quote(str(prefix)), bin=shlex.quote(str(bin_dir))),
    }
    for name, text in files.items():
        staged = bin_dir / f".{name}.{os.getpid()}"
        staged.write_text(text)
        staged.chmod(0o755)
        os.replace(staged, bin_dir / name)
    python3 = bin_dir / "python3"
    if not python3.exists():
        with contextlib.suppress(FileExistsError):
            python3.symlink_to("python")
    return folder
