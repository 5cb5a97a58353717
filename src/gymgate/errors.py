"""Errors that end a gymgate command, each carrying the exit code it maps to.

Exit codes follow one rule everywhere: 0 clean, 1 a regression or failure was found,
2 a usage or infrastructure error (the run could not be judged).
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_ERROR = 2


class GymgateError(Exception):
    """A failure with a message meant for a person; ends the command with ``exit_code``."""

    exit_code = EXIT_ERROR


class UsageError(GymgateError):
    """The user asked for something gymgate cannot interpret (bad ref, bad flag)."""


class InfraError(GymgateError):
    """The machine could not do what was asked (no Python, lock failed, server died)."""


class StaleLockError(InfraError):
    """A committed lock no longer matches its project file."""


class BuildError(InfraError):
    """This Gym ref cannot be locked, built or started on this machine: its runs are BROKEN, not unjudged.
    (A stale or mismatched committed lock is gymgate's own mistake and stays a plain InfraError.)"""
