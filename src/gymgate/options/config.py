"""gymgate's settings from the repository it is used in: `gymgate.toml`, or `[tool.gymgate]` in `pyproject.toml`,
found by walking up from the working directory (as ruff finds its settings), so an RL repository keeps its baseline,
environment set and reviews next to the code they protect. A key is an option's flag without its dashes
(`baseline`, `env-set`, `env`, `rl-profile`, `no-replays`); a flag, then a GYMGATE_* variable, overrides it. A key no
option has, or a value of the wrong type, is a usage error naming the file and the key."""

from __future__ import annotations

import argparse
import os
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from gymgate.errors import UsageError
from gymgate.locations import installed
from gymgate.options.declared import OPTIONS, RUNS_VAR
from gymgate.options.shapes import Option

FILE, PYPROJECT = "gymgate.toml", "pyproject.toml"
INSTALLED_RUNS = (
    Path(".gymgate") / "runs"
)  # an installed gymgate's run folders, beside the settings file  # a folder's gymgate.toml wins over its pyproject.toml
# Where each setting came from, as `gymgate config` says it.
FLAG, VARIABLE, DEFAULT = "flag", "variable", "default"


@dataclass(frozen=True)
class Settings:
    """The settings file found (None: none) and each option's value from it, converted as its flag would be."""

    path: Path | None = None
    values: dict[str, Any] = field(default_factory=dict)  # option name -> value
    keys: dict[str, str] = field(default_factory=dict)  # option name -> the key as the file writes it
    written: dict[str, Any] = field(default_factory=dict)  # option name -> the value as the file writes it

    def source(self, name: str) -> str:
        where = f"[tool.gymgate] of {self.path}" if self.path and self.path.name == PYPROJECT else str(self.path)
        return f"{where}: {self.keys[name]}"


def keyed() -> dict[str, Option]:
    """Every option a settings file may set, by its key (the flag without dashes); gymgate's own internal options
    and positional arguments are not settings."""
    return {o.flags[0].lstrip("-"): o for o in OPTIONS if not o.positional and not o.internal}


def find(start: Path) -> tuple[Path, dict[str, Any]] | None:
    """The nearest settings at or above `start`: a gymgate.toml, or a pyproject.toml with a [tool.gymgate] table."""
    for folder in (start, *start.parents):
        own = folder / FILE
        if own.is_file():
            return own, _toml(own)
        project = folder / PYPROJECT
        if project.is_file():
            table = _toml(project).get("tool", {}).get("gymgate")
            if table is not None:
                if not isinstance(table, dict):
                    raise UsageError(f"{project}: [tool.gymgate] must be a table")
                return project, table
    return None


def _toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path} cannot be read as TOML ({exc}); fix it or move it away") from None


@cache
def settings(start: Path | None = None) -> Settings:
    """The settings that apply in `start` (default: the working directory), read once per process."""
    found = find((start or Path.cwd()).resolve())
    if found is None:
        return Settings()
    path, table = found
    options = keyed()
    values, keys, written = {}, {}, {}
    for key, value in table.items():
        if key not in options:
            known = ", ".join(sorted(options))
            raise UsageError(f"{path}: unknown setting {key!r} (a setting is an option's flag without dashes: {known})")
        option = options[key]
        converted = _converted(option, value, f"{path}: {key}")
        if option.type is Path:  # a folder the file names is relative to the file's own folder, not to where one runs
            converted = [path.parent / p for p in converted] if option.repeatable else path.parent / converted
        values[option.name], keys[option.name] = converted, key
        written[option.name] = value
    return Settings(path, values, keys, written)


def _converted(option: Option, value: Any, where: str) -> Any:
    """`value` as the option's flag would give it to the command."""
    action = option.extra.get("action")
    if action in ("store_true", "store_false"):
        if not isinstance(value, bool):
            raise UsageError(f"{where}: expected true or false, got {value!r}")
        return value if action == "store_true" else not value
    if option.repeatable:
        items = value if isinstance(value, list) else [value]
        return [_one(option, item, where) for item in items]
    return _one(option, value, where)


def _one(option: Option, value: Any, where: str) -> Any:
    if isinstance(value, dict | list | bool):
        raise UsageError(f"{where}: expected a single value, got {value!r}")
    text = str(value)
    choices = option.extra.get("choices")
    if choices is not None and text not in choices:
        raise UsageError(f"{where}: expected one of {', '.join(map(str, choices))}, got {text!r}")
    try:
        return option.type(text) if option.type is not None else text
    except (argparse.ArgumentTypeError, ValueError) as exc:
        raise UsageError(f"{where}: {exc}") from None


def effective(option: Option) -> tuple[Any, str]:
    """The value a command gets for an option nobody gave on its command line, and where it came from: the
    variable (when set, and not read below), else the settings file, else the declared default."""
    here = settings()
    found = None if option.read_below else option.variable()
    if found is not None:
        return found, VARIABLE
    if option.read_below and option.var and os.environ.get(option.var, "").strip() and option.var not in EXPORTED:
        return os.environ[option.var], VARIABLE
    if option.name in here.values:
        return here.values[option.name], here.source(option.name)
    return option.default, DEFAULT


EXPORTED: set[str] = set()  # the variables export_read_below set from the settings file (not the user's)


def export_read_below() -> None:
    """The settings of options read where they are used (the runs and cache folders, the Gym repository, the
    environments) handed on as their variables when those are unset: this process and every child read them so."""
    here = settings()
    if installed() and not os.environ.get(RUNS_VAR) and "runs_dir" not in here.values:
        # An installed gymgate has no checkout to keep runs in: they go beside the repository's settings (or here).
        anchor = here.path.parent if here.path else Path.cwd()
        os.environ[RUNS_VAR] = str(anchor / INSTALLED_RUNS)
        EXPORTED.add(RUNS_VAR)
    for option in OPTIONS:
        if option.read_below and option.var and option.name in here.values and not os.environ.get(option.var):
            value = here.values[option.name]
            joint = os.pathsep if option.type is Path else ","
            os.environ[option.var] = joint.join(map(str, value)) if isinstance(value, list) else str(value)
            EXPORTED.add(option.var)


def config_command() -> int:
    """`gymgate config`: each setting with its value and its source; a flag given to a command wins over all."""
    here = settings()
    print(
        f"settings file: {here.path}"
        if here.path
        else f"settings file: none (gymgate.toml or [tool.gymgate] in pyproject.toml, from {Path.cwd()} up)"
    )
    rows = []
    for key, option in sorted(keyed().items()):
        value, source = effective(option)
        rows.append((key, here.written.get(option.name, value) if source not in (VARIABLE, DEFAULT) else value, source))
    width = max(len(key) for key, _, _ in rows)
    for key, value, source in rows:
        if keyed()[key].extra.get("action") == "store_false" and isinstance(value, bool):
            value = not value  # a `no-…` flag's setting, as the file writes it
        shown = "" if value is None else ",".join(map(str, value)) if isinstance(value, list) else str(value)
        print(f"  {key:<{width}}  {shown or '—'}  ({source})")
    return 0
