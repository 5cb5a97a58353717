"""Declarations made into what reads them: each command's parser (its options under their groups' titles), the
in-environment entry points' options, a child's command line, and the typed values a command's function takes."""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import typing
from collections.abc import Callable
from typing import Any

from gymgate.options import config
from gymgate.options.declared import BY_NAME, GROUPS, OPTIONS
from gymgate.options.shapes import SESSION, Option


def default(name: str) -> Any:
    """An option's declared default (not its variable's value): what a run gets when nobody set it."""
    return BY_NAME[name].default


def add_to(parser: argparse.ArgumentParser, command: str) -> None:
    """Every option `command` takes, under its group's title, in declaration order. Reads the GYMGATE_* defaults
    (a bad one: UsageError)."""
    for group in GROUPS:
        taken = [o for o in group.options if command in o.commands]
        if not taken:
            continue
        where = parser.add_argument_group(group.title)
        for option in taken:
            _add(where, option)


def _add(where: Any, option: Option) -> None:
    kwargs = {"help": argparse.SUPPRESS if option.internal else option.help_text(), **option.extra}
    if option.type is not None:
        kwargs["type"] = option.type
    if option.positional:  # shown as its flag, parsed into its name
        kwargs.setdefault("metavar", option.flags[0])
        where.add_argument(option.name, **kwargs)
        return
    where.add_argument(*option.flags, dest=option.name, default=_default(option), **kwargs)


def _default(option: Option) -> Any:
    """What the parser falls back on: the variable, else the repository's settings (options.config), else the
    declared default. A repeatable option's settings are applied after parsing (a flag must replace them, where
    argparse would append to them); one read below is handed on as its variable (config.export_read_below)."""
    if option.read_below or option.repeatable:
        return option.parser_default()
    return config.effective(option)[0]


def apply_settings(args: argparse.Namespace) -> None:
    """A repeatable option the command line did not give, from the repository's settings."""
    here = config.settings()
    for option in OPTIONS:
        unset = option.repeatable and not option.read_below and getattr(args, option.name, "absent") is None
        if unset and option.name in here.values:
            setattr(args, option.name, list(here.values[option.name]))


def session_options(child: str = SESSION) -> list[Option]:
    return [o for o in OPTIONS if o.session and child in o.children]


def add_session_options(addoption: Callable[..., Any], child: str = SESSION) -> None:
    """The options an in-environment entry point takes (a pytest parser's `addoption`, or an argparse
    `add_argument`): each with its declared default, never a variable's (the harness always passes the value it
    means)."""
    for option in session_options(child):
        kwargs: dict[str, Any] = {
            "help": option.help_text(variable=False),
            "dest": option.name,
            "default": option.default,
        }
        if option.repeatable:
            kwargs["action"] = "append"
        if option.type is not None:  # the command line's own reader: a value the harness could not pass is refused
            kwargs["type"] = option.type
        addoption(option.session, **kwargs)


def child_argv(child: str, run_options: Any, **values: Any) -> list[str]:
    """The command line of an in-environment entry point: each option it takes, from `values` or else the run
    options' attribute of that name; a list repeats its flag, None is left out."""
    argv: list[str] = []
    for option in session_options(child):
        value = values[option.name] if option.name in values else getattr(run_options, option.name, None)
        if value is None:
            continue
        for item in value if option.repeatable else [value]:
            argv += [option.session, str(item)]
    return argv


def bind(function: Callable[..., Any], parsed: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments `function` takes, from a parsed command line: a parameter typed as a dataclass is that
    value, its fields filled by name (the run's options as one value); any other parameter is the parsed value of its
    name, or its own default when the command has no such option. The command line stops here: what a command's
    function receives is typed values, never the parsed namespace."""
    hints = typing.get_type_hints(function)
    bound: dict[str, Any] = {}
    for name, parameter in inspect.signature(function).parameters.items():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        kind = hints.get(name)
        if isinstance(kind, type) and dataclasses.is_dataclass(kind):
            bound[name] = values(kind, parsed)
        elif hasattr(parsed, name):
            bound[name] = getattr(parsed, name)
        elif parameter.default is inspect.Parameter.empty:
            raise TypeError(f"{function.__module__}.{function.__qualname__}: no option {name!r} for it")
    return bound


def values(kind: type, parsed: Any) -> Any:
    """A dataclass of option values, each field from the parsed value of its name (a field no option fills keeps
    its default)."""
    return kind(**{f.name: getattr(parsed, f.name) for f in dataclasses.fields(kind) if hasattr(parsed, f.name)})
