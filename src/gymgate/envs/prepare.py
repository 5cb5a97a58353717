"""From a resolved GymSource to a ready environment: interpreter, project, lock, sync."""

from __future__ import annotations

from pathlib import Path

from gymgate.envs import lockstore
from gymgate.envs.project import lock, project_dir, project_text, write_project
from gymgate.envs.python import Interpreter, select
from gymgate.envs.sync import SyncedEnv, ensure_env
from gymgate.errors import EXIT_OK, UsageError
from gymgate.locations import installed
from gymgate.locks import held
from gymgate.refs.pins import known_pins, load_pin
from gymgate.refs.source import GymSource


def interpreter_for(source: GymSource) -> Interpreter:
    return select(source.requires_python, source.describe())


def relock(source: GymSource, upgrade: bool = False) -> None:
    """Regenerate the project and its lock (what `nox -s lock` does for a pin)."""
    where = write_project(source)
    lock(where, interpreter_for(source), upgrade=upgrade)


def prepare_env(source: GymSource, wide: bool = False) -> SyncedEnv:
    """`wide`: the variant with every runnable server's requirements (envs/project.WIDE)."""
    interp = interpreter_for(source)
    where = project_dir(source, wide)
    if wide or not source.pinned:
        # Unpinned refs get a project generated once per content digest and locked on the spot; a wide variant is
        # generated again (and relocked) whenever what it would declare changed (gymgate's runnable rules, cases).
        # A tree's project takes the lock of a project like it when uv accepts it offline (envs/lockstore.py).
        where.parent.mkdir(parents=True, exist_ok=True)
        with held(Path(str(where) + ".lock"), 600, f"locking the project of {source.name}"):
            text = project_text(source, wide) if wide else None
            current = (where / "pyproject.toml").read_text() if (where / "pyproject.toml").is_file() else None
            if not (where / "uv.lock").is_file() or (text is not None and text != current):
                write_project(source, wide, text)
                if not lockstore.seed(where, interp):
                    lock(where, interp)
                    lockstore.keep(where, interp)
    return ensure_env(where, source, interp)


def lock_command(pins: list[str], upgrade: bool) -> int:
    """`gymgate lock`: regenerate the pins' projects and locks (default: every pin)."""

    if installed():  # the laid-out data is keyed by the installed files: a relock there would belie its key
        raise UsageError(
            "gymgate lock regenerates gymgate's own pins: run it in a checkout of gymgate, not an installed one"
        )
    names = pins or known_pins()
    for name in names:
        source = load_pin(name)
        if source is None:
            raise UsageError(f"no pin named {name!r}; known pins: {', '.join(known_pins())}")
        relock(source, upgrade=upgrade)
        print(f"locked envs/{name}/uv.lock for {source.describe()}")
    return EXIT_OK
