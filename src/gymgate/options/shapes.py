"""The shape of a declaration: an Option (a flag, maybe with a GYMGATE_* variable), a Variable (a setting only a
variable sets) and the Group `--help` shows them under."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gymgate.errors import UsageError

SESSION, UP = "session", "up"  # the in-environment entry points: the pytest session plugin, and `up`'s services run


@dataclass(frozen=True)
class Option:
    """One option. `help` may name `{default}`; the variable (if any) is appended to it. `session` is the flag
    the in-environment entry points in `children` take the value as (None: the harness keeps it)."""

    name: str  # the attribute it parses into (argparse dest, RunOptions field)
    flags: tuple[str, ...]
    help: str
    commands: tuple[str, ...]  # the commands that take it ("cases list", "accept", …)
    default: Any = None
    type: Callable[[str], Any] | None = None
    var: str = ""  # the GYMGATE_* variable that sets it, if any
    read_below: bool = False  # the variable is read where the value is used, not by the parser
    session: str | None = None
    children: tuple[str, ...] = (SESSION,)  # which in-environment entry points take it (when `session` is set)
    extra: Mapping[str, Any] = field(default_factory=dict)  # argparse keywords: action, metavar, required, nargs
    internal: bool = False  # what gymgate passes itself (nox's sessions): parsed, but not shown by --help

    @property
    def positional(self) -> bool:
        return not self.flags[0].startswith("-")

    @property
    def repeatable(self) -> bool:
        return self.extra.get("action") == "append"

    def help_text(self, variable: bool = True) -> str:
        text = self.help.format(default=self.default)
        return f"{text} (or ${self.var})" if self.var and variable else text

    def variable(self, convert: Callable[[str], Any] | None = None) -> Any:
        """The variable's value read as `convert` (default: the flag's type) reads it; None when unset or empty."""
        raw = os.environ.get(self.var, "").strip() if self.var else ""
        if not raw:
            return None
        try:
            return (convert or self.type or str)(raw)
        except (argparse.ArgumentTypeError, ValueError) as exc:
            raise UsageError(f"${self.var}={raw!r} (the default of {'/'.join(self.flags)}): {exc}") from None

    def parser_default(self) -> Any:
        """The default the parser uses: the variable's value when it is set (and not read below), else the
        declared one."""
        found = None if self.read_below else self.variable()
        return self.default if found is None else found


@dataclass(frozen=True)
class Variable:
    """A setting only a GYMGATE_* variable sets (no flag): read where it acts, through `value()`; a value that is
    not one of `choices` (when given) is a usage error naming it."""

    var: str
    help: str
    choices: tuple[str, ...] = ()
    default: str = ""

    def value(self) -> str:
        raw = os.environ.get(self.var, "").strip()
        if not raw:
            return self.default
        if self.choices and raw.lower() not in self.choices:
            raise UsageError(f"${self.var}={raw!r}: expected one of {', '.join(self.choices)}")
        return raw.lower() if self.choices else raw


@dataclass(frozen=True)
class Group:
    """Options a reader looks for together; `--help` shows each command's options under these titles."""

    title: str
    options: tuple[Option, ...] = ()
    variables: tuple[Variable, ...] = ()
